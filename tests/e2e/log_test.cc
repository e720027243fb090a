// The structured log line: values that could break it (a client's model name) stay inside one quoted value.
#include "server/observability/log.h"

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

std::string LineOf(const std::string& value) {
  testing::internal::CaptureStderr();
  Log(LogLevel::kWarning, "test_event", {{"model", value}});
  return testing::internal::GetCapturedStderr();
}

TEST(LogTest, PlainValuesAreWrittenAsTheyAre) {
  const std::string line = LineOf("resnet");
  EXPECT_EQ(line.substr(line.find(" level=")), " level=warning event=test_event model=resnet\n");
}

// A carriage return or newline in a value ended the line (or, unquoted, rewrote it on a terminal) and let a
// request forge a line of its own.
TEST(LogTest, ControlBytesCannotEndTheLineOrForgeAnother) {
  const std::string line = LineOf("m\rts=2024-01-01T00:00:00.000Z level=error event=forged\n\x1b[2J");
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_NE(line.find("model=\"m\\x0dts=2024-01-01T00:00:00.000Z level=error event=forged\\x0a\\x1b[2J\"\n"),
            std::string::npos)
      << line;
}

TEST(LogTest, QuotesAndBackslashesAreEscapedInsideQuotes) {
  EXPECT_NE(LineOf("a \"b\" \\c").find("model=\"a \\\"b\\\" \\\\c\"\n"), std::string::npos);
}

}  // namespace
}  // namespace onnxserve::server
