// Replays a fuzz target's committed regression inputs (tests/fuzz/regressions/<target>/) through its
// LLVMFuzzerTestOneInput, in any build: no libFuzzer needed. Under ONNXSERVE_SANITIZE a regression that
// comes back is reported by ASan/UBSan; otherwise a crash or a trap fails the test.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(FuzzRegressions, EveryInputRunsCleanly) {
  const std::filesystem::path dir = ONNXSERVE_FUZZ_REGRESSIONS;
  int replayed = 0;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      SCOPED_TRACE(entry.path().string());
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
      ++replayed;
    }
  }
  RecordProperty("replayed", replayed);
}

}  // namespace
