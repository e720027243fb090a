// model_warmup without a server: which inputs each sample builds, how often it runs, and the errors that
// name a sample and input the config gets wrong. The model is a servable that records what it was given.
#include "server/serving/warmup.h"

#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

// A completed config: inputs x FP32 [-1, 3] and n INT64 [-1, 2] (batch dim implied by max_batch_size 8).
inference::ModelConfig Config(const std::string& warmup, int max_batch_size = 8) {
  inference::ModelConfig config;
  const std::string text = absl::StrCat(
      "max_batch_size: ", max_batch_size, R"(
      input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 3 ] }, { name: "n" data_type: TYPE_INT64 dims: [ 2 ] } ]
      output [ { name: "y" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
  )", warmup);
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// A model that records the inputs of each run and answers with its first input, or with `answer` when set.
struct Recorder : Servable {
  std::vector<std::vector<Tensor>> runs;
  absl::Status answer = absl::OkStatus();
  void Run(ServableRequest request, ServableDone done) override {
    runs.push_back(request.inputs);
    if (!answer.ok()) return done({answer, {}});
    done({std::vector<Tensor>{request.inputs[0]}, {}});
  }
};

// x zeros [batch, 5, 3], n random [batch, 2], run `count` times.
std::string ZerosAndRandom(int count) {
  return absl::StrCat(R"(
  model_warmup [ {
    name: "sample"
    batch_size: 4
    count: )", count, R"(
    inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 5, 3 ] zero_data: true } }
    inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] random_data: true } }
  } ])");
}

TEST(WarmupTest, EachSampleRunsCountTimesWithItsBatchAndData) {
  Recorder model;
  ASSERT_TRUE(Warmup(Config(ZerosAndRandom(3)), model).ok());
  ASSERT_EQ(model.runs.size(), 3u);
  const std::vector<Tensor>& inputs = model.runs[0];
  ASSERT_EQ(inputs.size(), 2u);  // in config input order: x, n
  EXPECT_EQ(inputs[0].shape(), (Shape{4, 5, 3}));
  for (float v : inputs[0].values<float>()) EXPECT_EQ(v, 0.f);
  EXPECT_EQ(inputs[1].shape(), (Shape{4, 2}));
  for (int64_t v : inputs[1].values<int64_t>()) EXPECT_TRUE(v == 0 || v == 1) << v;
}

TEST(WarmupTest, CountZeroRunsOnceAndNoSamplesRunNothing) {
  Recorder once;
  ASSERT_TRUE(Warmup(Config(ZerosAndRandom(0)), once).ok());
  EXPECT_EQ(once.runs.size(), 1u);
  Recorder none;
  ASSERT_TRUE(Warmup(Config(""), none).ok());
  EXPECT_TRUE(none.runs.empty());
}

TEST(WarmupTest, RandomFloatsAreInTheUnitInterval) {
  Recorder model;
  ASSERT_TRUE(Warmup(Config(R"(model_warmup [ { name: "r" batch_size: 8
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 16, 3 ] random_data: true } }
      inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] zero_data: true } } } ])"),
                     model).ok());
  ASSERT_EQ(model.runs.size(), 1u);
  bool varied = false;
  const auto values = model.runs[0][0].values<float>();
  for (float v : values) {
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
    varied = varied || v != values[0];
  }
  EXPECT_TRUE(varied);
}

// Each mistake is an error naming the sample and what is wrong, and nothing runs.
TEST(WarmupTest, ASampleThatDoesNotFitTheConfigIsAnErrorNamingIt) {
  const std::string x = R"(inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 5, 3 ] zero_data: true } })";
  const std::string n = R"(inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] zero_data: true } })";
  const std::pair<std::string, std::string> cases[] = {
      {"batch_size: 0 " + x + n, "batch_size must be in [1, 8]"},
      {"batch_size: 9 " + x + n, "batch_size must be in [1, 8]"},
      // A count of 4e9 held the load (and a server starting up) for hours of warmup runs.
      {"batch_size: 1 count: 1001 " + x + n, "count must be at most 1000"},
      {"batch_size: 1 " + x, "no data for input \"n\""},
      {"batch_size: 1 " + x + n + R"( inputs { key: "z" value { zero_data: true } })", "\"z\" is not an input"},
      {"batch_size: 1 " + x + R"(inputs { key: "n" value { data_type: TYPE_INT32 dims: [ 2 ] zero_data: true } })",
       "input \"n\": data_type TYPE_INT32 differs"},
      {"batch_size: 1 " + x + R"(inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 3 ] zero_data: true } })",
       "input \"n\": dims [3] do not fit"},
      {"batch_size: 1 " + n + R"(inputs { key: "x" value { data_type: TYPE_FP32 dims: [ -1, 3 ] zero_data: true } })",
       "input \"x\": dims [-1,3] do not fit"},
      {"batch_size: 1 " + x + R"(inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] } })",
       "input \"n\": needs zero_data or random_data"},
      {"batch_size: 1 " + x + R"(inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] input_data_file: "n.bin" } })",
       "input_data_file is not supported"},
  };
  for (const auto& [sample, message] : cases) {
    Recorder model;
    const absl::Status status =
        Warmup(Config("model_warmup [ { name: \"bad\" " + sample + " } ]"), model);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << sample << ": " << status;
    EXPECT_NE(status.message().find("model_warmup \"bad\""), std::string::npos) << status;
    EXPECT_NE(status.message().find(message), std::string::npos) << sample << ": " << status;
    EXPECT_TRUE(model.runs.empty()) << sample;
  }
}

TEST(WarmupTest, WithoutBatchingTheSampleIsTheWholeInputAndBatchSizeOne) {
  Recorder model;
  auto sample = [](int batch) {
    return absl::StrCat(R"(model_warmup [ { name: "s" batch_size: )", batch, R"(
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 2, 3 ] zero_data: true } }
      inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] zero_data: true } } } ])");
  };
  const std::string one = sample(1), two = sample(2);
  ASSERT_TRUE(Warmup(Config(one, 0), model).ok());
  ASSERT_EQ(model.runs.size(), 1u);
  EXPECT_EQ(model.runs[0][0].shape(), (Shape{2, 3}));
  const absl::Status status = Warmup(Config(two, 0), model);
  EXPECT_NE(status.message().find("batch_size must be in [1, 1] (no batching)"), std::string::npos) << status;
}

// A sample's inputs are what a request would carry, so they are bounded like one, before any is made: a
// [1e9, 3] zero sample of the dynamic input x was 12 GB (within the tensor limits) to zero at load.
TEST(WarmupTest, InputsPastWhatARequestMayCarryAreRefusedBeforeTheyAreMade) {
  auto sample = [](int64_t rows) {
    return absl::StrCat(R"(model_warmup [ { name: "big" batch_size: 1
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ )", rows, R"(, 3 ] zero_data: true } }
      inputs { key: "n" value { data_type: TYPE_INT64 dims: [ 2 ] zero_data: true } } } ])");
  };
  Recorder model;
  // 12 bytes a row of x plus the 16 of n: 100 rows take 1216 bytes.
  EXPECT_TRUE(Warmup(Config(sample(100)), model, 1216).ok());
  const absl::Status over = Warmup(Config(sample(100)), model, 1215);
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument) << over;
  EXPECT_NE(over.message().find("--max-request-bytes"), std::string::npos) << over;
  const absl::Status huge = Warmup(Config(sample(1000000000)), model);
  EXPECT_NE(huge.message().find("input \"x\""), std::string::npos) << huge;
  EXPECT_EQ(model.runs.size(), 1u);  // the one that fit
}

TEST(WarmupTest, AFailedRunFailsTheWarmupWithItsCode) {
  Recorder model;
  model.answer = absl::ResourceExhaustedError("over budget");
  const absl::Status status = Warmup(Config(ZerosAndRandom(3)), model);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("model_warmup \"sample\": run 1 failed: over budget"), std::string::npos) << status;
  EXPECT_EQ(model.runs.size(), 1u);  // no second run after a failure
}

}  // namespace
}  // namespace onnxserve::server
