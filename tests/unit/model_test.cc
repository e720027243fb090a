// Model loading: initializer encodings, external data confinement, and graph validation errors that name
// the node or tensor at fault.
#include "runtime/model/model.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/core/memory_budget.h"
#include "runtime/exec/session.h"
#include "runtime/model/tensor_proto.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

namespace fs = std::filesystem;

onnx::ModelProto IdentityChain(int nodes) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("chain");
  auto* in = g->add_input();
  in->set_name("v0");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < nodes; ++i) {
    auto* n = g->add_node();
    n->set_op_type("Identity");
    n->set_name(absl::StrCat("n", i));
    n->add_input(absl::StrCat("v", i));
    n->add_output(absl::StrCat("v", i + 1));
  }
  g->add_output()->set_name(absl::StrCat("v", nodes));
  return model;
}

void ExpectError(const onnx::ModelProto& model, absl::StatusCode code, const std::string& fragment) {
  auto loaded = Model::FromProto(model, "");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), code) << loaded.status();
  EXPECT_NE(loaded.status().message().find(fragment), std::string::npos) << loaded.status();
}

TEST(ModelTest, LoadsAndRunsAValidGraphInTopologicalOrder) {
  auto model = IdentityChain(3);
  // Reverse the nodes in the file: the plan must still order them by data dependence.
  auto* nodes = model.mutable_graph()->mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  auto session = Session::Create(*Model::FromProto(model, ""));
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"v0", Tensor::FromVector<float>({2}, {1.5f, -2.f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<float>()[1], -2.f);
}

TEST(ModelTest, RejectsUndefinedInputsNamingTheNode) {
  auto model = IdentityChain(2);
  model.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  ExpectError(model, absl::StatusCode::kInvalidArgument, "node \"n1\" (Identity): input \"nowhere\"");
}

TEST(ModelTest, RejectsCycles) {
  auto model = IdentityChain(2);
  model.mutable_graph()->mutable_node(0)->set_input(0, "v2");
  ExpectError(model, absl::StatusCode::kInvalidArgument, "cycle");
}

TEST(ModelTest, RejectsDuplicateOutputs) {
  auto model = IdentityChain(2);
  model.mutable_graph()->mutable_node(1)->set_output(0, "v1");
  ExpectError(model, absl::StatusCode::kInvalidArgument, "output \"v1\" is already defined");
}

// Found by the model fuzzer: a node with two subgraph attributes of one name freed the first subgraph while
// the graph check still read it (heap use after free).
TEST(ModelTest, RejectsAttributesNamedTwiceOnANode) {
  auto model = IdentityChain(1);
  auto* node = model.mutable_graph()->mutable_node(0);
  for (int copy = 0; copy < 2; ++copy) {
    auto* attr = node->add_attribute();
    attr->set_name("body");
    attr->set_type(onnx::AttributeProto::GRAPH);
    attr->mutable_g()->set_name(absl::StrCat("body", copy));
  }
  ExpectError(model, absl::StatusCode::kInvalidArgument, "node \"n0\" (Identity): attribute \"body\" appears twice");
}

TEST(ModelTest, RejectsGraphOutputsNobodyProduces) {
  auto model = IdentityChain(1);
  model.mutable_graph()->add_output()->set_name("ghost");
  ExpectError(model, absl::StatusCode::kInvalidArgument, "output \"ghost\"");
}

TEST(ModelTest, RejectsComplexInitializersClearly) {
  auto model = IdentityChain(1);
  auto* init = model.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::COMPLEX64);
  init->add_dims(1);
  init->set_raw_data(std::string(8, '\0'));
  ExpectError(model, absl::StatusCode::kUnimplemented, "complex64 is not supported");
}

TEST(ModelTest, RejectsGarbageBytes) {
  auto loaded = Model::LoadFromBytes("\xff\xff\xff not a model", "");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelTest, LoadsFilesAndNamesTheOneThatIsNotAModel) {
  const fs::path dir = fs::temp_directory_path() / ("onnxserve_load_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string good = (dir / "good.onnx").string(), bad = (dir / "bad.onnx").string();
  std::ofstream(good, std::ios::binary) << IdentityChain(2).SerializeAsString();
  std::ofstream(bad, std::ios::binary) << "\xff\xff\xff not a model";

  auto loaded = Model::LoadFromFile(good);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->graph().topological_order().size(), 2u);
  auto rejected = Model::LoadFromFile(bad);
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rejected.status().message().find(bad), std::string::npos) << rejected.status();
  EXPECT_EQ(Model::LoadFromFile((dir / "missing.onnx").string()).status().code(), absl::StatusCode::kNotFound);
  fs::remove_all(dir);
}

TEST(ModelTest, OpsetImportsAreCanonicalized) {
  auto model = IdentityChain(1);
  model.mutable_opset_import(0)->set_domain("ai.onnx");
  auto loaded = Model::FromProto(model, "");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->OpsetFor(""), 13);
  EXPECT_EQ((*loaded)->OpsetFor("ai.onnx.ml"), 0);
}

// Adds `name` = float[values] to `graph`'s initializers as raw bytes.
void AddRawInitializer(onnx::GraphProto& graph, const std::string& name, const std::vector<float>& values) {
  auto* init = graph.add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(static_cast<int64_t>(values.size()));
  init->set_raw_data(values.data(), values.size() * sizeof(float));
}

TEST(ModelTest, KeepsInitializerValuesOnlyOnceDecoded) {
  // y = If(cond) then (x + w_then) else x, with w_main feeding the condition's graph and w_then living
  // in the branch: both graphs' payloads must leave the proto, and both values must still be used.
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("main");
  for (const char* name : {"x", "cond"}) {
    auto* in = g->add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(std::string(name) == "x" ? onnx::TensorProto::FLOAT
                                                                                        : onnx::TensorProto::BOOL);
  }
  AddRawInitializer(*g, "w_main", {10.f, 20.f});
  auto* add_main = g->add_node();
  add_main->set_op_type("Add");
  add_main->add_input("x");
  add_main->add_input("w_main");
  add_main->add_output("x_plus");
  auto* if_node = g->add_node();
  if_node->set_op_type("If");
  if_node->add_input("cond");
  if_node->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* attr = if_node->add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    auto* sub = attr->mutable_g();
    sub->set_name(branch);
    auto* add = sub->add_node();
    add->set_op_type(std::string(branch) == "then_branch" ? "Add" : "Identity");
    add->add_input("x_plus");
    if (std::string(branch) == "then_branch") {
      AddRawInitializer(*sub, "w_then", {1.f, 2.f});
      add->add_input("w_then");
    }
    add->add_output(absl::StrCat(branch, "_out"));
    sub->add_output()->set_name(absl::StrCat(branch, "_out"));
  }
  g->add_output()->set_name("y");

  auto loaded = Model::FromProto(model, "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const auto& kept = (*loaded)->proto().graph();
  EXPECT_TRUE(kept.initializer(0).raw_data().empty());
  EXPECT_EQ(kept.initializer(0).name(), "w_main");
  EXPECT_EQ(kept.initializer(0).dims(0), 2);
  EXPECT_TRUE(kept.node(1).attribute(0).g().initializer(0).raw_data().empty());

  auto session = Session::Create(*loaded);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2}, {0.5f, 0.25f})},
                              {"cond", Tensor::FromVector<bool>({}, {true})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<float>()[0], 11.5f);
  EXPECT_EQ((*out)[0].values<float>()[1], 22.25f);
}

TEST(TensorProtoTest, ReadsTypedFieldsAndRawData) {
  onnx::TensorProto typed;
  typed.set_data_type(onnx::TensorProto::INT32);
  typed.add_dims(3);
  for (int v : {1, -2, 3}) typed.add_int32_data(v);
  auto t = TensorFromProto(typed);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->values<int32_t>()[1], -2);

  onnx::TensorProto half;
  half.set_data_type(onnx::TensorProto::FLOAT16);
  half.add_dims(1);
  half.add_int32_data(0x3c00);  // 1.0 in IEEE half precision
  auto h = TensorFromProto(half);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(static_cast<float>(h->values<Float16>()[0]), 1.0f);

  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::FLOAT);
  raw.add_dims(2);
  const float values[2] = {0.25f, 8.f};
  raw.set_raw_data(values, sizeof values);
  auto r = TensorFromProto(raw);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->values<float>()[1], 8.f);

  raw.set_raw_data(values, 4);
  EXPECT_EQ(TensorFromProto(raw).status().code(), absl::StatusCode::kInvalidArgument);
}

class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onnxserve_ext_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "weights");
    std::ofstream out(dir_ / "weights" / "w.bin", std::ios::binary);
    const float values[3] = {1.f, 2.f, 3.f};
    out.write("pad!", 4);
    out.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  void TearDown() override { fs::remove_all(dir_); }

  onnx::TensorProto External(const std::string& location, const std::string& offset = "4") {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(3);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t.add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    auto* off = t.add_external_data();
    off->set_key("offset");
    off->set_value(offset);
    return t;
  }

  fs::path dir_;
};

TEST_F(ExternalDataTest, BoolBytesOtherThanZeroOrOneAreRefused) {
  onnx::TensorProto t = External("weights/w.bin");  // from offset 4: the float 1.0f, bytes 00 00 80 3f
  t.set_data_type(onnx::TensorProto::BOOL);
  t.set_dims(0, 2);
  auto zeros = TensorFromProto(t, dir_.string());
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  const auto flags = zeros->values<bool>();
  EXPECT_EQ(std::vector<bool>(flags.begin(), flags.end()), (std::vector<bool>{false, false}));
  t.set_dims(0, 3);
  EXPECT_EQ(TensorFromProto(t, dir_.string()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ExternalDataTest, ReadsAtOffsetRelativeToTheModelFolder) {
  auto t = TensorFromProto(External("weights/w.bin"), dir_.string());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->values<float>()[2], 3.f);
}

TEST_F(ExternalDataTest, RejectsAbsolutePathsAndEscapes) {
  auto abs = TensorFromProto(External((dir_ / "weights/w.bin").string()), dir_.string());
  EXPECT_EQ(abs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(abs.status().message().find("relative"), std::string::npos);
  auto up = TensorFromProto(External("../w.bin"), (dir_ / "weights").string());
  EXPECT_EQ(up.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(up.status().message().find("escapes"), std::string::npos);
}

TEST_F(ExternalDataTest, NamesTheMissingFile) {
  auto t = TensorFromProto(External("weights/missing.bin"), dir_.string());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("missing.bin"), std::string::npos);
}

// A location that passes the lexical check but is a symlink out of the model folder: its target (here a
// file beside the folder, standing in for /etc/passwd) must never be read.
TEST_F(ExternalDataTest, RejectsSymlinksLeavingTheModelFolder) {
  const fs::path model_dir = dir_ / "model";
  fs::create_directories(model_dir / "sub");
  fs::create_symlink(dir_ / "weights" / "w.bin", model_dir / "w.bin");
  fs::create_directory_symlink(dir_ / "weights", model_dir / "sub" / "up");
  for (const char* location : {"w.bin", "sub/up/w.bin"}) {
    auto t = TensorFromProto(External(location), model_dir.string());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << location << ": " << t.status();
    EXPECT_NE(t.status().message().find("escapes the model folder"), std::string::npos) << t.status();
  }
}

TEST_F(ExternalDataTest, FollowsSymlinksThatStayInside) {
  fs::create_symlink("w.bin", dir_ / "weights" / "alias.bin");
  auto t = TensorFromProto(External("weights/alias.bin"), dir_.string());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->values<float>()[0], 1.f);
}

TEST_F(ExternalDataTest, BadOffsetsAndLengthsAreErrorsNotCrashes) {
  for (const char* offset : {"abc", "-4", "", "4x", "99999999999999999999"}) {
    auto t = TensorFromProto(External("weights/w.bin", offset), dir_.string());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << "offset " << offset;
    EXPECT_NE(t.status().message().find("offset"), std::string::npos) << t.status();
  }
  onnx::TensorProto bad_length = External("weights/w.bin");
  auto* length = bad_length.add_external_data();
  length->set_key("length");
  length->set_value("twelve");
  EXPECT_EQ(TensorFromProto(bad_length, dir_.string()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ExternalDataTest, OffsetsBeyondTheFileAreErrors) {
  // The file holds 16 bytes: 4 of padding, then 12 of data.
  for (const char* offset : {"8", "16", "17", "9223372036854775807"}) {
    auto t = TensorFromProto(External("weights/w.bin", offset), dir_.string());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << "offset " << offset;
    EXPECT_NE(t.status().message().find("too short"), std::string::npos) << t.status();
  }
}

TEST(TensorProtoTest, AStringTensorMissingItsValuesIsRefusedBeforeItsElementsAreBuilt) {
  // A 54-byte model declaring 100 M strings and holding none made the loader construct 3 GB of empty
  // strings before it compared the counts. The budget sees any string array the loader builds.
  onnx::TensorProto proto;
  proto.set_name("labels");
  proto.set_data_type(onnx::TensorProto::STRING);
  proto.add_dims(int64_t{1} << 20);
  proto.add_string_data("only one");
  auto account = std::make_shared<MemoryAccount>(1024);
  ScopedMemoryAccount watch_allocations(account);
  absl::StatusOr<Tensor> t = TensorFromProto(proto);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_NE(t.status().message().find("holds 1 values"), std::string::npos) << t.status();
  EXPECT_EQ(account->peak_bytes(), 0);
}

// A BOOL tensor's raw bytes other than 0 and 1 are undefined behaviour once read as bool (a request's were:
// Not of 2 answered 3); a model's are refused, as requests' are.
TEST(TensorProtoTest, BoolRawBytesOtherThanZeroOrOneAreRefused) {
  onnx::TensorProto t;
  t.set_name("flags");
  t.set_data_type(onnx::TensorProto::BOOL);
  t.add_dims(3);
  t.set_raw_data(std::string("\x00\x01\x01", 3));
  auto fine = TensorFromProto(t, "");
  ASSERT_TRUE(fine.ok()) << fine.status();
  const auto flags = fine->values<bool>();
  EXPECT_EQ(std::vector<bool>(flags.begin(), flags.end()), (std::vector<bool>{false, true, true}));
  t.set_raw_data(std::string("\x00\x01\x02", 3));
  auto refused = TensorFromProto(t, "");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_NE(refused.status().message().find("element 2 is byte 2"), std::string::npos) << refused.status();
}

TEST(TensorProtoTest, RejectsDimsWhoseByteSizeWrapsAround) {
  // 2^62 floats (or 2^61 int64s) are 2^64 bytes, 0 after wrapping: an empty payload matched and the tensor
  // was accepted with no storage behind it.
  for (const auto& [type, dim] : {std::pair{onnx::TensorProto::FLOAT, int64_t{1} << 62},
                                  std::pair{onnx::TensorProto::INT64, int64_t{1} << 61}}) {
    onnx::TensorProto proto;
    proto.set_name("huge");
    proto.set_data_type(type);
    proto.add_dims(1);
    proto.add_dims(dim);
    proto.set_raw_data("");
    auto t = TensorFromProto(proto);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted) << t.status();
    EXPECT_NE(t.status().message().find("\"huge\""), std::string::npos) << t.status();
  }
  onnx::TensorProto negative;
  negative.set_data_type(onnx::TensorProto::FLOAT);
  negative.add_dims(-1);
  EXPECT_EQ(TensorFromProto(negative).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExecutionTest, AnOutputPastTheSizeLimitFailsTheRunNamingTheNode) {
  // Broadcasting [2^20, 1] + [1, 2^20] asks for 2^40 floats (4 TiB): the allocation threw out of the kernel
  // and aborted the process.
  auto out = testing::OpTest("Add", 14)
                 .Input("a", Tensor(DataType::kFloat, {int64_t{1} << 20, 1}))
                 .Input("b", Tensor(DataType::kFloat, {1, int64_t{1} << 20}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
  EXPECT_NE(out.status().message().find("(Add-14)"), std::string::npos) << out.status();
}

// A Constant that lists no output still has its kernel write output 0, past the outputs the executor and
// constant folding made room for: a heap write while the model loaded (found by the model fuzzer; UBSan
// flagged the index). The output goes nowhere now, folded or run.
TEST(ExecutionTest, AKernelWritingAnOutputItsNodeDoesNotListLeavesTheRunIntact) {
  auto model = testing::GraphBuilder()
                   .Input("x", {2})
                   .NodeWith("Constant", {}, {}, {testing::FloatAttr("value_float", 2.f)})
                   .Node("Relu", {"x"}, "y")
                   .Output("y")
                   .Load();
  for (bool optimize : {true, false}) {
    SessionOptions options;
    options.optimize = optimize;
    auto session = Session::Create(model, options);
    ASSERT_TRUE(session.ok()) << session.status();
    auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2}, {-1.f, 3.f})}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].values<float>()[0], 0.f);
    EXPECT_EQ((*out)[0].values<float>()[1], 3.f);
  }
}

// A node listing more outputs than its op has (a Relu with two) leaves the extra one unmade. Read as a graph
// output it failed the run as INTERNAL (a server error, HTTP 500), read by a node as a missing input; it is
// the model's fault, INVALID_ARGUMENT, naming the node and the output, on every path.
TEST(ExecutionTest, AnOutputTheOpDoesNotHaveIsTheModelsErrorNamingIt) {
  const auto relu_of_two = [](testing::GraphBuilder builder) {
    return builder.Input("x", {2}).NodeWith("Relu", {"x"}, {"y", "z"});
  };
  const std::vector<std::shared_ptr<const Model>> models = {
      relu_of_two(testing::GraphBuilder()).Output("y").Output("z").Load(),
      relu_of_two(testing::GraphBuilder()).Node("Neg", {"z"}, "w").Output("w").Load(),
  };
  for (const auto& model : models) {
    for (bool optimize : {true, false}) {
      SessionOptions options;
      options.optimize = optimize;
      auto session = Session::Create(model, options);
      if (!session.ok()) {  // refusing such a model at load would do as well
        EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument) << session.status();
        continue;
      }
      auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2}, {-1.f, 3.f})}});
      EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
      EXPECT_NE(out.status().message().find("\"z\""), std::string::npos) << out.status();
    }
  }
}

}  // namespace
}  // namespace onnxserve
