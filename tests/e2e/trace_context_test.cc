// The W3C traceparent parser: the one valid shape of version 00, and the malformed headers it must ignore.
#include "server/observability/trace_context.h"

#include <string>

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

// The specification's own example.
constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(ParseTraceparentTest, ValidHeaderGivesTraceAndSpanIds) {
  auto parsed = ParseTraceparent(kValid);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(parsed->span_id, "00f067aa0ba902b7");
}

TEST(ParseTraceparentTest, AnyFlagsAndIdsWithSomeZerosAreValid) {
  EXPECT_TRUE(ParseTraceparent("00-00000000000000000000000000000001-0000000000000001-00").has_value());
  EXPECT_TRUE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff").has_value());
}

TEST(ParseTraceparentTest, MalformedHeadersAreIgnored) {
  const std::string valid = kValid;
  const std::string cases[] = {
      "",
      "00",
      valid.substr(0, valid.size() - 1),                                   // one byte short
      valid + "-",                                                         // one byte long
      valid + "0",                                                         // one byte long
      "01" + valid.substr(2),                                              // a version we do not speak
      "ff" + valid.substr(2),                                              // the forbidden version
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",           // all-zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",           // all-zero span id
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",           // upper case
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",           // not hex
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",           // flags not hex
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",           // wrong separators
      "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
      "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01",           // fields of the wrong lengths
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",         // a control byte
      " 0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\0", 55),  // a NUL byte
  };
  for (const std::string& header : cases) {
    EXPECT_FALSE(ParseTraceparent(header).has_value()) << "\"" << header << "\"";
  }
}

}  // namespace
}  // namespace onnxserve::server
