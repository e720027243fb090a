// Request parameters of every InferParameter type: whole numbers as int64 or uint64, the queue timeout a
// request may choose, and errors that name a parameter of the wrong type.
#include "server/serving/request_parameters.h"

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

InferParameters With(const std::string& key, const std::function<void(inference::InferParameter&)>& set) {
  InferParameters parameters;
  set(parameters[key]);
  return parameters;
}

TEST(IntegerParameterTest, Int64AndUint64AreTheSameWholeNumber) {
  auto as_int = IntegerParameter(With("n", [](auto& p) { p.set_int64_param(-7); }), "n");
  ASSERT_TRUE(as_int.ok()) << as_int.status();
  EXPECT_EQ(*as_int, std::optional<int64_t>(-7));
  auto as_uint = IntegerParameter(With("n", [](auto& p) { p.set_uint64_param(9); }), "n");
  ASSERT_TRUE(as_uint.ok()) << as_uint.status();
  EXPECT_EQ(*as_uint, std::optional<int64_t>(9));
  auto absent = IntegerParameter(InferParameters(), "n");
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(*absent, std::nullopt);
}

TEST(IntegerParameterTest, OtherTypesAndHugeUnsignedValuesAreErrorsNamingTheParameter) {
  const std::pair<std::function<void(inference::InferParameter&)>, const char*> cases[] = {
      {[](auto& p) { p.set_double_param(1.5); }, "double_param"},
      {[](auto& p) { p.set_string_param("10"); }, "string_param"},
      {[](auto& p) { p.set_bool_param(true); }, "bool_param"},
      {[](auto& p) { p.set_uint64_param(uint64_t{1} << 63); }, "uint64_param"},
      {[](auto&) {}, "no value"},
  };
  for (const auto& [set, type] : cases) {
    auto value = IntegerParameter(With("timeout", set), "timeout");
    ASSERT_FALSE(value.ok()) << type;
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(value.status().message().find("\"timeout\""), std::string::npos) << value.status();
    EXPECT_NE(value.status().message().find(type), std::string::npos) << value.status();
  }
}

inference::ModelQueuePolicy Policy(uint64_t default_us, bool allow_override) {
  inference::ModelQueuePolicy policy;
  policy.set_default_timeout_microseconds(default_us);
  policy.set_allow_timeout_override(allow_override);
  return policy;
}

TEST(QueueTimeoutTest, TheDefaultAppliesUnlessTheRequestMayAndDoesChoose) {
  const InferParameters five_ms = With("timeout", [](auto& p) { p.set_uint64_param(5000); });
  EXPECT_EQ(QueueTimeout(Policy(20000, false), five_ms).value(), absl::Milliseconds(20));
  EXPECT_EQ(QueueTimeout(Policy(20000, true), five_ms).value(), absl::Milliseconds(5));
  EXPECT_EQ(QueueTimeout(Policy(20000, true), InferParameters()).value(), absl::Milliseconds(20));
  EXPECT_EQ(QueueTimeout(Policy(0, false), InferParameters()).value(), absl::InfiniteDuration());
  EXPECT_EQ(QueueTimeout(Policy(20000, true), With("timeout", [](auto& p) { p.set_int64_param(0); })).value(),
            absl::InfiniteDuration());
}

TEST(QueueTimeoutTest, ABadTimeoutIsAnErrorOnlyWhereTheRequestMayChoose) {
  const InferParameters negative = With("timeout", [](auto& p) { p.set_int64_param(-1); });
  const InferParameters fractional = With("timeout", [](auto& p) { p.set_double_param(2.5); });
  EXPECT_EQ(QueueTimeout(Policy(20000, true), negative).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(QueueTimeout(Policy(20000, true), fractional).status().code(), absl::StatusCode::kInvalidArgument);
  // Without allow_timeout_override the parameter is not read, as in Triton.
  EXPECT_EQ(QueueTimeout(Policy(20000, false), fractional).value(), absl::Milliseconds(20));
}

inference::ModelDynamicBatching ThreeLevels() {
  inference::ModelDynamicBatching batching;
  batching.set_priority_levels(3);
  batching.set_default_priority_level(2);
  (*batching.mutable_priority_queue_policy())[1].set_max_queue_size(7);
  batching.mutable_default_queue_policy()->set_max_queue_size(9);
  return batching;
}

// Triton's mapping: a level of the model is kept; 0, a number past the levels, or none is the default.
TEST(PriorityLevelTest, ALevelOfTheModelIsKeptAnythingElseIsTheDefault) {
  const inference::ModelDynamicBatching batching = ThreeLevels();
  EXPECT_EQ(PriorityLevel(batching, InferParameters()).value(), 2u);
  EXPECT_EQ(PriorityLevel(batching, With("priority", [](auto& p) { p.set_uint64_param(1); })).value(), 1u);
  EXPECT_EQ(PriorityLevel(batching, With("priority", [](auto& p) { p.set_int64_param(3); })).value(), 3u);
  EXPECT_EQ(PriorityLevel(batching, With("priority", [](auto& p) { p.set_uint64_param(0); })).value(), 2u);
  EXPECT_EQ(PriorityLevel(batching, With("priority", [](auto& p) { p.set_uint64_param(4); })).value(), 2u);
  EXPECT_FALSE(PriorityLevel(batching, With("priority", [](auto& p) { p.set_double_param(1); })).ok());
  // Without levels every request is level 1, whatever it asks.
  EXPECT_EQ(PriorityLevel(inference::ModelDynamicBatching(), With("priority", [](auto& p) { p.set_int64_param(3); }))
                .value(),
            1u);
}

TEST(PriorityLevelTest, ALevelWithoutAPolicyOfItsOwnUsesTheDefaultOne) {
  const inference::ModelDynamicBatching batching = ThreeLevels();
  EXPECT_EQ(QueuePolicyOf(batching, 1).max_queue_size(), 7u);
  EXPECT_EQ(QueuePolicyOf(batching, 2).max_queue_size(), 9u);
  EXPECT_EQ(QueuePolicyOf(batching, 3).max_queue_size(), 9u);
}

}  // namespace
}  // namespace onnxserve::server
