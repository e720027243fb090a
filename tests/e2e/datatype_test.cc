// Request tensor decoding (server/serving/datatype.h): the shape is the client's, so a payload is checked against
// the count the shape declares before anything is allocated for it.
#include "server/serving/datatype.h"

#include <string>

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

TEST(DatatypeTest, BytesTooShortForTheDeclaredElementsAreRefusedBeforeAllocating) {
  // 30 bytes declaring 2^27 BYTES elements: the tensor of empty strings alone was 4.3 GB and took 16 s
  // before the payload was found short.
  const std::string raw(30, 'x');
  auto tensor = TensorFromRaw("s", DataType::kString, {int64_t{1} << 26, 2}, raw);
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument) << tensor.status();
  EXPECT_NE(tensor.status().message().find("raw content of 30 bytes cannot hold the 134217728 BYTES elements"),
            std::string::npos)
      << tensor.status();
}

TEST(DatatypeTest, ShapesWhoseSizeWrapsAroundAreRefused) {
  // 2^62 floats are 2^64 bytes, 0 after wrapping: an empty payload used to match and reach a kernel.
  for (const auto& [type, shape] : {std::pair{DataType::kFloat, Shape{1, int64_t{1} << 62}},
                                    std::pair{DataType::kInt64, Shape{1, int64_t{1} << 61}},
                                    std::pair{DataType::kString, Shape{int64_t{1} << 62, 4}}}) {
    auto tensor = TensorFromRaw("x", type, shape, "");
    EXPECT_FALSE(tensor.ok()) << ShapeToString(shape);
    EXPECT_NE(tensor.status().message().find("input \"x\""), std::string::npos) << tensor.status();
  }
}

TEST(DatatypeTest, TypedContentsAreCountedBeforeAllocating) {
  inference::InferTensorContents contents;
  contents.add_fp32_contents(1.0f);
  auto tensor = TensorFromContents("x", DataType::kFloat, {int64_t{1} << 40}, contents);
  EXPECT_FALSE(tensor.ok());
  tensor = TensorFromContents("x", DataType::kFloat, {1 << 20, 1 << 10}, contents);
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument) << tensor.status();
  EXPECT_NE(tensor.status().message().find("contents hold 1 values, expected 1073741824"), std::string::npos)
      << tensor.status();
}

TEST(DatatypeTest, AWellFormedPayloadDecodes) {
  const std::string raw("\x02\x00\x00\x00hi\x00\x00\x00\x00", 10);
  auto tensor = TensorFromRaw("s", DataType::kString, {2}, raw);
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->values<std::string>()[0], "hi");
  EXPECT_EQ(tensor->values<std::string>()[1], "");
}

}  // namespace
}  // namespace onnxserve::server
