// BitCast-26: bits kept, type changed; widths must match, sub-byte types keep their patterns, and bytes that
// are no bool are refused.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

// DataType numbers are onnx.TensorProto.DataType's (Debian's onnx.proto predates int4 and int2).
absl::StatusOr<Tensor> BitCastTo(DataType to, Tensor x) {
  auto out = OpTest("BitCast", 26).Input("x", std::move(x)).Attr("to", static_cast<int64_t>(to)).Output("y").Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

TEST(BitCastTest, FloatBitsReadAsInt32) {
  // 1.0f is 0x3F800000; -2.5f is 0xC0200000.
  auto y = BitCastTo(DataType::kInt32, Tensor::FromVector<float>({2}, {1.0f, -2.5f}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2}, {0x3F800000, static_cast<int32_t>(0xC0200000u)}), *y));
}

TEST(BitCastTest, Uint16BitsReadAsFloat16KeepTheShape) {
  auto y = BitCastTo(DataType::kFloat16, Tensor::FromVector<uint16_t>({1, 2}, {0x3C00, 0xC000}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Float16>({1, 2}, {Float16(1.0f), Float16(-2.0f)}), *y));
}

TEST(BitCastTest, SubByteTypesKeepTheirBitPatterns) {
  // int4 -1 is 0b1111, uint4 15; uint4 8 is 0b1000, int4 -8.
  auto y = BitCastTo(DataType::kUint4, Tensor::FromVector<Int4>({3}, {Int4(-1), Int4(7), Int4(-8)}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<UInt4>({3}, {UInt4(15), UInt4(7), UInt4(8)}), *y));

  y = BitCastTo(DataType::kInt2, Tensor::FromVector<UInt2>({2}, {UInt2(3), UInt2(1)}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Int2>({2}, {Int2(-1), Int2(1)}), *y));
}

TEST(BitCastTest, BytesOtherThanZeroAndOneAreNoBool) {
  auto y = BitCastTo(DataType::kBool, Tensor::FromVector<uint8_t>({3}, {0, 1, 1}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({3}, {false, true, true}), *y));

  y = BitCastTo(DataType::kBool, Tensor::FromVector<int8_t>({3}, {0, 1, 2}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("element 2"), std::string::npos) << y.status();
}

TEST(BitCastTest, WidthsMustMatchAndStringsAreRefused) {
  auto y = BitCastTo(DataType::kInt64, Tensor::FromVector<float>({1}, {1.0f}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("32-bit elements, int64 has 64"), std::string::npos) << y.status();

  y = BitCastTo(DataType::kString, Tensor::FromVector<uint8_t>({1}, {1}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("cannot bitcast to string"), std::string::npos) << y.status();

  y = BitCastTo(DataType::kInt4, Tensor::FromVector<uint8_t>({1}, {1}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("8-bit elements, int4 has 4"), std::string::npos) << y.status();
}

}  // namespace
}  // namespace onnxserve
