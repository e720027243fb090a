// config.pbtxt handling that needs no server: the per-model thread count and execution timeout.
#include "server/config.h"

#include <google/protobuf/text_format.h>

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

TEST(ConfigTest, ThreadsParameterOverridesTheFlag) {
  auto threads = ThreadsParameter(Parse(R"(parameters { key: "threads" value { string_value: "2" } })"), 1);
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_EQ(*threads, 2);
}

TEST(ConfigTest, WithoutTheParameterTheFlagApplies) {
  auto threads = ThreadsParameter(Parse(R"(max_batch_size: 8)"), 3);
  ASSERT_TRUE(threads.ok());
  EXPECT_EQ(*threads, 3);
}

TEST(ConfigTest, ABadThreadCountIsAnErrorNamingTheValue) {
  for (const char* bad : {"0", "-1", "two", "1.5"}) {
    auto threads = ThreadsParameter(
        Parse(std::string(R"(parameters { key: "threads" value { string_value: ")") + bad + "\" } }"), 1);
    ASSERT_FALSE(threads.ok()) << bad;
    EXPECT_EQ(threads.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(threads.status().message().find(bad), std::string::npos) << threads.status();
  }
}

TEST(ConfigTest, ExecutionTimeoutIsInfiniteUnlessTheParameterSetsIt) {
  auto timeout = ExecutionTimeoutParameter(Parse(R"(max_batch_size: 8)"));
  ASSERT_TRUE(timeout.ok());
  EXPECT_EQ(*timeout, absl::InfiniteDuration());
  timeout = ExecutionTimeoutParameter(Parse(R"(parameters { key: "execution_timeout_ms" value { string_value: "250" } })"));
  ASSERT_TRUE(timeout.ok()) << timeout.status();
  EXPECT_EQ(*timeout, absl::Milliseconds(250));
}

TEST(ConfigTest, ABadExecutionTimeoutIsAnErrorNamingTheValue) {
  for (const char* bad : {"0", "-5", "soon", "1e3", "99999999999999999999"}) {
    auto timeout = ExecutionTimeoutParameter(
        Parse(std::string(R"(parameters { key: "execution_timeout_ms" value { string_value: ")") + bad + "\" } }"));
    ASSERT_FALSE(timeout.ok()) << bad;
    EXPECT_EQ(timeout.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(timeout.status().message().find(bad), std::string::npos) << timeout.status();
  }
}

}  // namespace
}  // namespace onnxserve::server
