// OpTest: a one-node model built in memory, run through the real loader, registry and executor.
//
//   OpTest("Dropout", 12).Input("x", Tensor::FromVector<float>({2}, {1, 2}))
//       .Input("ratio", Tensor::Scalar(0.5f)).Attr("seed", int64_t{0})
//       .Output("y").Output("mask").Run();
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/run_limits.h"
#include "runtime/core/tensor.h"
#include "runtime/core/value.h"

namespace onnxserve::testing {

class OpTest {
 public:
  OpTest(std::string op_type, int opset, std::string domain = "");

  // A graph input fed at run time.
  OpTest& Input(const std::string& name, Tensor value);
  // A graph input of any kind (a sequence, a map, an optional), declared with the type the value has (an empty
  // optional as optional(tensor(float))).
  OpTest& ValueInput(const std::string& name, Value value);
  // An initializer (known at load time, as kernels that pre-pack weights see it).
  OpTest& Constant(const std::string& name, Tensor value);
  // A graph input the node does not take, for subgraphs that read it from the enclosing graph.
  OpTest& OuterInput(const std::string& name, Tensor value);
  // An omitted optional input ("").
  OpTest& NoInput();
  OpTest& Output(const std::string& name);
  OpTest& NoOutput();

  // Setting an attribute again replaces it.
  OpTest& Attr(const std::string& name, int64_t v);
  OpTest& Attr(const std::string& name, float v);
  OpTest& Attr(const std::string& name, const std::string& v);
  OpTest& Attr(const std::string& name, const std::vector<int64_t>& v);
  OpTest& Attr(const std::string& name, const std::vector<float>& v);
  OpTest& Attr(const std::string& name, const std::vector<std::string>& v);
  OpTest& Attr(const std::string& name, const Tensor& v);
  OpTest& Attr(const onnx::AttributeProto& attr);
  // Imports another domain at a version (for example ai.onnx next to ai.onnx.preview.training).
  OpTest& Opset(const std::string& domain, int version);
  // The session's intra-op threads (1 unless set), for kernels that split work over the pool.
  OpTest& Threads(int threads);
  // The session's memory budget per run (none unless set).
  OpTest& MemoryBudget(int64_t bytes);

  onnx::ModelProto BuildModel() const;
  // Loads, compiles and runs; the outputs in the node's output order (omitted ones skipped).
  absl::StatusOr<std::vector<Tensor>> Run(const RunLimits& limits = {}) const;
  // Run for outputs of any kind.
  absl::StatusOr<std::vector<Value>> RunValues(const RunLimits& limits = {}) const;

 private:
  onnx::NodeProto node_;
  std::vector<std::pair<std::string, Value>> feeds_;
  std::vector<std::pair<std::string, Tensor>> constants_;
  std::vector<std::pair<std::string, int>> opsets_;
  int threads_ = 1;
  int64_t memory_budget_ = 0;
};

// Element-wise comparison as the ONNX backend runner does it: same dtype and shape, and
// |actual - expected| <= atol + rtol * |expected| with NaN equal to NaN (exact for integers and strings).
::testing::AssertionResult TensorsClose(const Tensor& expected, const Tensor& actual, double rtol = 1e-3,
                                        double atol = 1e-7);

// Whether `out` is an error whose message contains `text` (the attribute or input it must name).
::testing::AssertionResult FailsWith(const absl::StatusOr<std::vector<Tensor>>& out, const std::string& text);

// Lowers the process-wide tensor limits (elements and bytes alike) for one test and restores them after.
class ScopedSizeLimits {
 public:
  explicit ScopedSizeLimits(int64_t max_bytes) : saved_(GetSizeLimits()) {
    EXPECT_TRUE(SetSizeLimits({.max_elements = max_bytes, .max_bytes = max_bytes}).ok());
  }
  ~ScopedSizeLimits() { EXPECT_TRUE(SetSizeLimits(saved_).ok()); }
  ScopedSizeLimits(const ScopedSizeLimits&) = delete;
  ScopedSizeLimits& operator=(const ScopedSizeLimits&) = delete;

 private:
  SizeLimits saved_;
};

// n floats uniform in [-1, 1), the same for the same seed: inputs for kernels checked against a reference.
std::vector<float> RandomFloats(int64_t n, uint32_t seed);
// A float tensor of `shape` holding RandomFloats.
Tensor RandomTensor(const Shape& shape, uint32_t seed);

// The output size of a convolution's spatial axis as the ONNX spec gives it for explicit pads.
int64_t ConvOutputSize(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel, int64_t dilation,
                       int64_t stride);

// One 2-D convolution's geometry for ReferenceConvAt: X is [batch, channels, in_h, in_w], W [maps,
// group_channels, kernel_h, kernel_w], each group of group_maps maps reading its group_channels channels.
struct ReferenceConvGeometry {
  int64_t channels, group_channels, group_maps, in_h, in_w, kernel_h, kernel_w;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
};

// Y[n, m, oh, ow] of that convolution by its definition, in double, without bias: what kernels are checked
// against.
double ReferenceConvAt(const ReferenceConvGeometry& g, const float* x, const float* w, int64_t n, int64_t m,
                       int64_t oh, int64_t ow);

}  // namespace onnxserve::testing
