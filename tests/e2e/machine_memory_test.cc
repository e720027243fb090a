// The memory the process may use (server/machine_memory.h), which sizes serve's default run memory budget.
#include "server/machine_memory.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

TEST(MachineMemoryTest, MemTotalIsReadInKibibytes) {
  EXPECT_EQ(MemTotalBytes("MemFree: 12 kB\nMemTotal:       24684084 kB\nSwapTotal: 0 kB\n"),
            int64_t{24684084} * 1024);
  EXPECT_EQ(MemTotalBytes("MemFree: 12 kB\n"), std::nullopt);
  EXPECT_EQ(MemTotalBytes("MemTotal: lots kB\n"), std::nullopt);
  EXPECT_EQ(MemTotalBytes("MemTotal: 100 MB\n"), std::nullopt);
  EXPECT_EQ(MemTotalBytes("MemTotal: 99999999999999999999 kB\n"), std::nullopt);
}

TEST(MachineMemoryTest, ACgroupLimitIsItsBytesAndMaxOrV1sHugeValueIsNone) {
  EXPECT_EQ(CgroupLimitBytes("8589934592\n"), int64_t{8} << 30);
  EXPECT_EQ(CgroupLimitBytes("max\n"), std::nullopt);
  EXPECT_EQ(CgroupLimitBytes("9223372036854771712\n"), std::nullopt);  // cgroup v1 without a limit
  EXPECT_EQ(CgroupLimitBytes(""), std::nullopt);
  EXPECT_EQ(CgroupLimitBytes("-1"), std::nullopt);
}

TEST(MachineMemoryTest, UsableMemoryIsAtMostTheMachines) {
  std::ifstream in("/proc/meminfo");
  if (!in) GTEST_SKIP() << "no /proc/meminfo";
  std::ostringstream text;
  text << in.rdbuf();
  const std::optional<int64_t> machine = MemTotalBytes(text.str());
  ASSERT_TRUE(machine.has_value());
  const std::optional<int64_t> usable = UsableMemoryBytes();
  ASSERT_TRUE(usable.has_value());
  EXPECT_GT(*usable, 0);
  EXPECT_LE(*usable, *machine);
}

}  // namespace
}  // namespace onnxserve::server
