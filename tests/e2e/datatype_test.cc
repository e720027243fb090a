// Request tensor decoding (server/serving/datatype.h): the shape is the client's, so a payload is checked against
// the count the shape declares before anything is allocated for it.
#include "server/serving/datatype.h"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// A bool is one byte that must hold 0 or 1: kernels read other bytes as neither (Not answered 3 for 2 and
// Cast to float 255.0 for 255), and reading one is undefined behaviour. Refused whether the tensor would
// copy the payload or read it in place.
TEST(DatatypeTest, BoolBytesOtherThanZeroAndOneAreRefused) {
  for (const bool in_place : {false, true}) {
    for (const char byte : {'\x02', '\xff'}) {
      auto owner = std::make_shared<std::string>(std::string("\x00\x01", 2) + byte);
      auto tensor = TensorFromRaw("b", DataType::kBool, {3}, *owner, in_place ? owner : nullptr);
      EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument) << tensor.status();
      EXPECT_NE(tensor.status().message().find("input \"b\": BOOL element 2 is byte " +
                                               std::to_string(static_cast<unsigned char>(byte)) +
                                               ", expected 0 or 1"),
                std::string::npos)
          << tensor.status();
    }
    auto owner = std::make_shared<std::string>("\x01\x00", 2);
    auto tensor = TensorFromRaw("b", DataType::kBool, {2}, *owner, in_place ? owner : nullptr);
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_EQ(tensor->values<bool>()[0], true);
    EXPECT_EQ(tensor->values<bool>()[1], false);
  }
}

// int_contents and uint_contents carry 32 bits for 8, 16 and 32-bit types: a value out of the type's range
// was cut to its low bits (INT8 300 ran as 44), where the same value as REST JSON is refused.
TEST(DatatypeTest, TypedContentsOutOfTheirTypesRangeAreRefused) {
  struct Case {
    DataType type;
    int64_t value;
    const char* expected;
  };
  for (const Case& c : {Case{DataType::kInt8, 300, "value 300 at element 1 does not fit INT8"},
                        Case{DataType::kInt8, -129, "value -129 at element 1 does not fit INT8"},
                        Case{DataType::kInt16, 40000, "value 40000 at element 1 does not fit INT16"},
                        Case{DataType::kUint8, 256, "value 256 at element 1 does not fit UINT8"},
                        Case{DataType::kUint16, 70000, "value 70000 at element 1 does not fit UINT16"}}) {
    inference::InferTensorContents contents;
    const bool is_signed = c.type == DataType::kInt8 || c.type == DataType::kInt16;
    if (is_signed) {
      contents.add_int_contents(1);
      contents.add_int_contents(static_cast<int32_t>(c.value));
    } else {
      contents.add_uint_contents(1);
      contents.add_uint_contents(static_cast<uint32_t>(c.value));
    }
    auto tensor = TensorFromContents("x", c.type, {2}, contents);
    EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument) << c.expected << ": " << tensor.status();
    EXPECT_NE(tensor.status().message().find(std::string("input \"x\": contents ") + c.expected), std::string::npos)
        << tensor.status();
  }
  inference::InferTensorContents edges;
  edges.add_int_contents(-128);
  edges.add_int_contents(127);
  auto tensor = TensorFromContents("x", DataType::kInt8, {2}, edges);
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->values<int8_t>()[0], -128);
  EXPECT_EQ(tensor->values<int8_t>()[1], 127);
}

TEST(DatatypeTest, AWellFormedPayloadDecodes) {
  const std::string raw("\x02\x00\x00\x00hi\x00\x00\x00\x00", 10);
  auto tensor = TensorFromRaw("s", DataType::kString, {2}, raw);
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->values<std::string>()[0], "hi");
  EXPECT_EQ(tensor->values<std::string>()[1], "");
}

// Four floats, 1 to 4, little-endian, at `offset` bytes into a buffer owned by a shared_ptr.
struct FloatsAt {
  explicit FloatsAt(size_t offset) : buffer(std::make_shared<std::vector<char>>(offset + 16)) {
    const float values[] = {1, 2, 3, 4};
    std::memcpy(buffer->data() + offset, values, sizeof(values));
    raw = std::string_view(buffer->data() + offset, sizeof(values));
  }
  std::shared_ptr<std::vector<char>> buffer;
  std::string_view raw;
};

TEST(DatatypeTest, WithAnOwnerNumbersAreReadInPlaceAndTheOwnerLivesAsLongAsTheTensor) {
  FloatsAt floats(16);
  std::weak_ptr<std::vector<char>> owner = floats.buffer;
  auto tensor = TensorFromRaw("x", DataType::kFloat, {2, 2}, floats.raw, std::move(floats.buffer));
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->raw_data(), floats.raw.data());
  EXPECT_FALSE(owner.expired());
  Tensor shared = *tensor;  // as an output that is its input would
  tensor = Tensor();
  EXPECT_FALSE(owner.expired());
  EXPECT_EQ(std::vector<float>(shared.values<float>().begin(), shared.values<float>().end()),
            (std::vector<float>{1, 2, 3, 4}));
  shared = Tensor();
  EXPECT_TRUE(owner.expired());
}

TEST(DatatypeTest, WithoutAnOwnerOrAlignmentNumbersAreCopied) {
  for (const size_t offset : {size_t{16}, size_t{1}}) {
    FloatsAt floats(offset);
    std::shared_ptr<const void> owner;
    if (offset == 1) owner = floats.buffer;  // misaligned for floats: copied all the same
    auto tensor = TensorFromRaw("x", DataType::kFloat, {4}, floats.raw, owner);
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_NE(tensor->raw_data(), floats.raw.data()) << offset;
    floats.buffer->assign(floats.buffer->size(), 0);  // the copy does not see the bytes change
    EXPECT_EQ(std::vector<float>(tensor->values<float>().begin(), tensor->values<float>().end()),
              (std::vector<float>{1, 2, 3, 4}))
        << offset;
  }
}

TEST(DatatypeTest, BytesElementsAreCopiedWhateverTheOwner) {
  auto raw = std::make_shared<std::string>("\x02\x00\x00\x00hi", 6);
  std::weak_ptr<std::string> owner = raw;
  auto tensor = TensorFromRaw("s", DataType::kString, {1}, *raw, raw);
  raw.reset();
  EXPECT_TRUE(owner.expired());  // the tensor does not hold it
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->values<std::string>()[0], "hi");
}

TEST(DatatypeTest, AppendRawWritesEachBytesElementAfterItsLittleEndianLength) {
  auto tensor = TensorFromRaw("s", DataType::kString, {2}, std::string("\x02\x00\x00\x00hi\x00\x00\x00\x00", 10));
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  tensor->mutable_values<std::string>()[1] = std::string(258, 'x');
  std::string out = "head";
  ASSERT_TRUE(AppendRaw(*tensor, out).ok());
  EXPECT_EQ(out, std::string("head\x02\x00\x00\x00hi\x02\x01\x00\x00", 14) + std::string(258, 'x'));
}

// A model's output can hold a BYTES element of 4 GiB or more (StringConcat doubles one per node); its length
// went out truncated to 32 bits, so a client read its characters as the following elements.
TEST(DatatypeTest, ABytesElementLongerThanItsLengthCanSayIsRefusedAndNothingAppended) {
  auto tensor = TensorFromRaw("s", DataType::kString, {2}, std::string("\x00\x00\x00\x00\x00\x00\x00\x00", 8));
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  tensor->mutable_values<std::string>()[1].resize(size_t{1} << 32);
  std::string out = "head";
  const absl::Status appended = AppendRaw(*tensor, out);
  EXPECT_EQ(appended.code(), absl::StatusCode::kResourceExhausted) << appended;
  EXPECT_EQ(out, "head");
}

}  // namespace
}  // namespace onnxserve::server
