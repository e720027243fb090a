// config.pbtxt handling that needs no server: the per-model thread count and execution timeout, the limits
// on fields that start threads or take memory, and the model name rules of the repository.
#include "server/serving/config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <google/protobuf/text_format.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/model/model.h"
#include "server/serving/repository.h"

namespace onnxserve::server {
namespace {

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// "01", " 1", "+1" and "001" parse as version 1 too: which of such folders served version 1 hung on the order
// the directory listed them. Only a version's own spelling is its folder.
TEST(RepositoryTest, OnlyAVersionsOwnSpellingIsItsFolder) {
  EXPECT_EQ(VersionOfFolder("1"), 1);
  EXPECT_EQ(VersionOfFolder("20260101"), 20260101);
  for (const char* other : {"01", " 1", "1 ", "+1", "001", "0", "-1", "1a", "", "99999999999999999999"}) {
    EXPECT_EQ(VersionOfFolder(other), std::nullopt) << "\"" << other << "\"";
  }
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

TEST(ConfigTest, MemoryBudgetParameterOverridesTheFlag) {
  auto budget = MemoryBudgetParameter(
      Parse(R"(parameters { key: "memory_budget_bytes" value { string_value: "1048576" } })"), 7);
  ASSERT_TRUE(budget.ok()) << budget.status();
  EXPECT_EQ(*budget, 1048576);
  budget = MemoryBudgetParameter(Parse(R"(max_batch_size: 8)"), 7);
  ASSERT_TRUE(budget.ok()) << budget.status();
  EXPECT_EQ(*budget, 7);
}

TEST(ConfigTest, ABadMemoryBudgetIsAnErrorNamingTheValue) {
  for (const char* bad : {"-1", "lots", "1GiB", "99999999999999999999"}) {
    auto budget = MemoryBudgetParameter(
        Parse(std::string(R"(parameters { key: "memory_budget_bytes" value { string_value: ")") + bad + "\" } }"), 0);
    ASSERT_FALSE(budget.ok()) << bad;
    EXPECT_EQ(budget.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(budget.status().message().find(bad), std::string::npos) << budget.status();
  }
}

// A session of the opset-14 model whose graph holds `graph` (text format: nodes, inputs, outputs).
std::unique_ptr<Session> SessionOfGraph(const std::string& graph) {
  onnx::ModelProto model;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      absl::StrCat("ir_version: 8 opset_import { version: 14 } graph { name: \"g\" ", graph, " }"), &model));
  auto loaded = Model::FromProto(model, "");
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Create(*std::move(loaded));
  EXPECT_TRUE(session.ok()) << session.status();
  return *std::move(session);
}

// A float tensor `name` of `dims` as a graph input or output, in text format; a dim is a number or a dim_param.
std::string FloatTensor(const std::string& name, std::initializer_list<std::string> dims) {
  std::string shape;
  for (const std::string& d : dims) {
    if (d == "?") {  // neither a size nor a name
      absl::StrAppend(&shape, "dim { } ");
      continue;
    }
    absl::StrAppend(&shape, std::isdigit(static_cast<unsigned char>(d[0])) ? "dim { dim_value: " + d + " } "
                                                                          : "dim { dim_param: \"" + d + "\" } ");
  }
  return absl::StrCat("{ name: \"", name, "\" type { tensor_type { elem_type: 1 shape { ", shape, "} } } }");
}

// A session of the opset-14 model whose graph is `nodes` from float x [N, 4] to float y [N, 4] (text format).
std::unique_ptr<Session> SessionOf(const std::string& nodes, const std::string& more_inputs = "") {
  return SessionOfGraph(absl::StrCat(nodes, " input ", FloatTensor("x", {"N", "4"}), " ", more_inputs, " output ",
                                     FloatTensor("y", {"N", "4"})));
}

// y = Identity(x) over float [N, 4]: a model to complete configs against.
std::unique_ptr<Session> IdentitySession() {
  return SessionOf(R"(node { op_type: "Identity" input: "x" output: "y" })");
}

TEST(ConfigTest, InstanceCountsAreCappedInsteadOfStartingThreads) {
  const auto session = IdentitySession();
  for (const char* text : {"instance_group { count: 2147483647 }", "instance_group { count: 65 }",
                           "instance_group [ { count: 40 }, { count: 40 } ]",
                           "instance_group [ { count: 64 }, { count: 2147483647 } ]"}) {
    inference::ModelConfig config = Parse(text);
    const absl::Status status = CompleteModelConfig("m", *session, true, config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text << ": " << status;
    EXPECT_NE(status.message().find("64"), std::string::npos) << status;
  }
  inference::ModelConfig most = Parse("instance_group [ { count: 60 }, { count: 4 } ]");
  ASSERT_TRUE(CompleteModelConfig("m", *session, true, most).ok());
  EXPECT_EQ(InstanceCount(most), kMaxInstances);
}

// Every Triton field onnxserve declares but does not implement parses, and completing the config fails
// with an error that names the field.
TEST(ConfigTest, DeclaredButUnsupportedFieldsAreErrorsNamingThem) {
  const auto session = IdentitySession();
  const std::pair<const char*, const char*> cases[] = {
      {"sequence_batching { max_sequence_idle_microseconds: 5 }", "sequence_batching"},
      {"sequence_batching { oldest { max_candidate_sequences: 4 } control_input { name: \"start\" } }",
       "sequence_batching"},
      {"ensemble_scheduling { step { model_name: \"a\" model_version: -1 input_map { key: \"x\" value: \"x\" } } }",
       "ensemble_scheduling"},
      {"runtime: \"model.py\"", "runtime \"model.py\""},
      {"max_batch_size: 8 dynamic_batching { preserve_ordering: true }", "preserve_ordering"},
      {"max_batch_size: 8 input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] is_shape_tensor: true } ]",
       "input \"x\": is_shape_tensor"},
      {"max_batch_size: 8 input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] allow_ragged_batch: true } ]",
       "input \"x\": allow_ragged_batch"},
      {"max_batch_size: 8 input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] optional: true } ]",
       "input \"x\": optional"},
      {"max_batch_size: 8 output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] label_filename: \"labels.txt\" } ]",
       "output \"y\": label_filename"},
      {"max_batch_size: 8 output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] is_shape_tensor: true } ]",
       "output \"y\": is_shape_tensor"},
      {"max_batch_size: 8 input [ { name: \"x\" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 4 ] } ]",
       "format FORMAT_NHWC needs 3 dims"},
  };
  for (const auto& [text, field] : cases) {
    inference::ModelConfig config = Parse(text);
    const absl::Status status = CompleteModelConfig("m", *session, true, config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text << ": " << status;
    EXPECT_NE(status.message().find(field), std::string::npos) << text << ": " << status;
  }
}

// A tensor listed twice made a version that loaded, warmed up and answered READY while no request could ever
// give it all its inputs ("missing input"), and an output listed twice came back twice in every answer.
TEST(ConfigTest, ATensorListedTwiceIsAnErrorNamingIt) {
  const auto session = IdentitySession();
  for (const char* text :
       {"max_batch_size: 8 input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] },"
        " { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] } ]",
        "max_batch_size: 8 output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] },"
        " { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] } ]"}) {
    inference::ModelConfig config = Parse(text);
    const absl::Status status = CompleteModelConfig("m", *session, true, config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text << ": " << status;
    EXPECT_NE(status.message().find("is listed twice"), std::string::npos) << text << ": " << status;
  }
}

// ReadModelConfig of a config.pbtxt holding `text`.
absl::StatusOr<inference::ModelConfig> ReadConfigText(const std::string& text) {
  const std::string path = testing::TempDir() + "/config_" + std::to_string(getpid()) + ".pbtxt";
  {
    std::ofstream out(path);
    out << text;
  }
  auto config = ReadModelConfig(path);
  std::filesystem::remove(path);
  return config;
}

TEST(ConfigTest, ResponseCacheIsTritonsFieldAndADeterministicModelMayEnableIt) {
  auto config = ReadConfigText("max_batch_size: 8\nresponse_cache { enable: true }\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->response_cache().enable());
  EXPECT_TRUE(CompleteModelConfig("m", *IdentitySession(), true, *config).ok());
  // Dropout at inference (no training_mode) is the identity: deterministic.
  auto dropout = SessionOf(R"(node { op_type: "Dropout" input: "x" output: "y" })");
  inference::ModelConfig cached = Parse("response_cache { enable: true }");
  EXPECT_TRUE(CompleteModelConfig("m", *dropout, true, cached).ok());
}

TEST(ConfigTest, AFieldResponseCacheDoesNotHaveIsStillAnErrorNamingIt) {
  auto config = ReadConfigText("response_cache { enable: true size: 5 }\n");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("size"), std::string::npos) << config.status();
}

TEST(ConfigTest, AModelThatDrawsRandomNumbersMayNotEnableTheResponseCache) {
  const std::pair<std::string, std::string> cases[] = {
      {R"(node { op_type: "RandomUniformLike" input: "x" output: "r" }
          node { op_type: "Add" input: "x" input: "r" output: "y" })", "RandomUniformLike"},
      {R"(node { op_type: "RandomNormalLike" input: "x" output: "r" attribute { name: "seed" f: 1 type: FLOAT } }
          node { op_type: "Add" input: "x" input: "r" output: "y" })", "RandomNormalLike"},
      // Dropout whose training_mode the request decides.
      {R"(node { op_type: "Dropout" input: "x" input: "" input: "train" output: "y" })", "Dropout"},
  };
  const std::string train_input =
      R"(input { name: "train" type { tensor_type { elem_type: 9 shape { } } } })";
  for (const auto& [nodes, op] : cases) {
    auto session = SessionOf(nodes, train_input);
    inference::ModelConfig config = Parse("response_cache { enable: true }");
    const absl::Status status = CompleteModelConfig("m", *session, true, config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << op << ": " << status;
    EXPECT_NE(status.message().find(op), std::string::npos) << status;
    EXPECT_NE(status.message().find("response_cache"), std::string::npos) << status;
    inference::ModelConfig uncached;
    EXPECT_TRUE(CompleteModelConfig("m", *session, true, uncached).ok()) << op;
  }
}

TEST(ConfigTest, PriorityLevelsFollowTritonsRules) {
  const auto session = IdentitySession();
  inference::ModelConfig good = Parse(R"(max_batch_size: 8 dynamic_batching {
      priority_levels: 3 default_priority_level: 2
      priority_queue_policy { key: 1 value { max_queue_size: 4 } }
      priority_queue_policy { key: 3 value { default_timeout_microseconds: 100 } } })");
  const absl::Status ok = CompleteModelConfig("m", *session, true, good);
  EXPECT_TRUE(ok.ok()) << ok;
  const std::pair<const char*, const char*> cases[] = {
      {"priority_levels: 2", "default_priority_level must be in [1, 2]"},
      {"priority_levels: 2 default_priority_level: 3", "default_priority_level must be in [1, 2]"},
      {"default_priority_level: 1", "need priority_levels > 0"},
      {"priority_queue_policy { key: 1 value { max_queue_size: 4 } }", "need priority_levels > 0"},
      {"priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value {} }",
       "priority_queue_policy key 3 is not a priority level in [1, 2]"},
      {"priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 0 value {} }",
       "priority_queue_policy key 0"},
      {"priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 2 value { timeout_action: DELAY } }",
       "timeout_action DELAY is not supported"},
      {"priority_levels: 100000 default_priority_level: 1", "priority_levels must be at most 1024"},
  };
  for (const auto& [text, message] : cases) {
    inference::ModelConfig config = Parse(absl::StrCat("max_batch_size: 8 dynamic_batching { ", text, " }"));
    const absl::Status status = CompleteModelConfig("m", *session, true, config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text << ": " << status;
    EXPECT_NE(status.message().find(message), std::string::npos) << text << ": " << status;
  }
}

// Without a config.pbtxt a model batches when every first dim is dynamic and bears one name, unless its
// declared shapes say it mixes the rows of a batch: then the requests batched together would each read the
// others' inputs (a Gram matrix y [N, N] of x [N, 2] answered one client 2000 from another's 1000), so it
// runs one request at a time. Unnamed dims say nothing either way: such a model is not batched by default.
TEST(ConfigTest, AModelWhoseShapesMixTheRowsOfABatchIsNotBatchedByDefault) {
  const std::string matmul = R"(node { op_type: "MatMul" input: "a" input: "b" output: "y" } )";
  const struct {
    const char* what;
    std::string graph;
    bool batches;
  } cases[] = {
      {"rows against rows: the Gram matrix y [N, N] of a [N, 2]",
       R"(node { op_type: "Transpose" input: "a" output: "b" } )" + matmul + "input " + FloatTensor("a", {"N", "2"}) +
           " output " + FloatTensor("y", {"N", "N"}),
       false},
      {"inputs of two batch sizes: queries [N, 2] against keys [M, 2]",
       matmul + "input " + FloatTensor("a", {"N", "2"}) + " input " + FloatTensor("b", {"M", "2"}) + " output " +
           FloatTensor("y", {"N", "2"}),
       false},
      {"unnamed dims show no batch dim: the Gram matrix y [?, ?] of a [?, 2]",
       R"(node { op_type: "Transpose" input: "a" output: "b" } )" + matmul + "input " + FloatTensor("a", {"?", "2"}) +
           " output " + FloatTensor("y", {"?", "?"}),
       false},
      {"an output whose first dim is named otherwise: y [M, 2] of a [N, 2]",
       R"(node { op_type: "Identity" input: "a" output: "y" } )" + std::string("input ") +
           FloatTensor("a", {"N", "2"}) + " output " + FloatTensor("y", {"M", "2"}),
       false},
      {"one batch size: [N, 2] x [N, 2, 1]",
       matmul + "input " + FloatTensor("a", {"N", "1", "2"}) + " input " + FloatTensor("b", {"N", "2", "1"}) +
           " output " + FloatTensor("y", {"N", "1", "1"}),
       true},
  };
  for (const auto& c : cases) {
    const auto session = SessionOfGraph(c.graph);
    inference::ModelConfig config;
    ASSERT_TRUE(CompleteModelConfig("m", *session, /*from_file=*/false, config).ok()) << c.what;
    EXPECT_EQ(config.max_batch_size() > 0, c.batches) << c.what;
    EXPECT_EQ(config.has_dynamic_batching(), c.batches) << c.what;
  }
}

TEST(ConfigTest, TheDefaultsOfTheNewFieldsAreAccepted) {
  const auto session = IdentitySession();
  inference::ModelConfig config = Parse(R"(
    max_batch_size: 8
    input [ { name: "x" data_type: TYPE_FP32 format: FORMAT_NONE dims: [ 4 ] optional: false } ]
    output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] label_filename: "" } ]
    dynamic_batching { preserve_ordering: false priority_levels: 0 }
    runtime: ""
    default_model_filename: "net.onnx")");
  const absl::Status status = CompleteModelConfig("m", *session, true, config);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ConfigTest, TheModelFileIsModelOnnxUnlessTheConfigNamesAnotherInTheVersionFolder) {
  EXPECT_EQ(ModelFileName(Parse("max_batch_size: 8")).value_or(""), "model.onnx");
  EXPECT_EQ(ModelFileName(Parse(R"(default_model_filename: "net.onnx")")).value_or(""), "net.onnx");
  for (const char* bad : {"../model.onnx", "sub/model.onnx", "..", ".", "/etc/passwd", "a\\b.onnx"}) {
    auto name = ModelFileName(Parse(absl::StrCat("default_model_filename: \"", absl::CEscape(bad), "\"")));
    ASSERT_FALSE(name.ok()) << bad;
    EXPECT_EQ(name.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(name.status().message().find("default_model_filename"), std::string::npos) << name.status();
  }
}

TEST(ConfigTest, AnOversizedConfigFileIsNotRead) {
  auto config = ReadConfigText("max_batch_size: 8\n" + std::string(kMaxConfigBytes, ' '));
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("larger than"), std::string::npos) << config.status();
  // The limit itself is a config's: the bytes read, not the size the file had, decide.
  const std::string head = "max_batch_size: 8\n";
  auto at_the_limit = ReadConfigText(head + std::string(kMaxConfigBytes - head.size(), ' '));
  ASSERT_TRUE(at_the_limit.ok()) << at_the_limit.status();
  EXPECT_EQ(at_the_limit->max_batch_size(), 8);
}

TEST(ModelNameTest, OnlyOneFolderNameIsAModelName) {
  for (const char* good : {"add", "resnet-50", "bert_base.v2", "A1"}) {
    EXPECT_TRUE(CheckModelName(good).ok()) << good;
  }
  EXPECT_TRUE(CheckModelName(std::string(kMaxModelNameBytes, 'm')).ok());
  const std::vector<std::string> bad_names = {
      "", ".", "..", ".hidden", "../add", "/etc", "a b", "add\n", "nested/inner", "a\\b", std::string("a\0b", 3),
      std::string(kMaxModelNameBytes + 1, 'm')};
  for (const std::string& bad : bad_names) {
    const absl::Status status = CheckModelName(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ModelNameTest, MessagesQuoteAtMostTheLongestModelName) {
  EXPECT_EQ(QuotedName("add"), "\"add\"");
  const std::string quoted = QuotedName(std::string(4 << 20, 'x'));
  EXPECT_LT(quoted.size(), kMaxModelNameBytes + 32);
  EXPECT_NE(quoted.find("(4194304 bytes)"), std::string::npos) << quoted;
}

}  // namespace
}  // namespace onnxserve::server
