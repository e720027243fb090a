// Comparisons (Equal Less LessOrEqual Greater GreaterOrEqual, yielding bool), boolean logic (And Or Xor
// Not) and bit operations (BitShift BitwiseAnd BitwiseOr BitwiseXor BitwiseNot). Binary ones broadcast
// like the arithmetic ops, including the pre-opset-7 `broadcast`/`axis` attributes (BinaryShapes).
#include <string>
#include <type_traits>

#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct ComparisonOp {
  template <typename T> static constexpr bool kAccepts = kIsNumber<T>;
  static constexpr bool kPredicate = true;
};

// Equal also compares bools (-11) and strings (-19).
struct EqualOp {
  template <typename T>
  static constexpr bool kAccepts = kIsNumber<T> || std::is_same_v<T, bool> || std::is_same_v<T, std::string>;
  static constexpr bool kPredicate = true;
  template <typename C> bool operator()(const C& a, const C& b) const { return a == b; }
};

struct LessOp : ComparisonOp {
  template <typename C> bool operator()(C a, C b) const { return a < b; }
};
struct LessOrEqualOp : ComparisonOp {
  template <typename C> bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterOp : ComparisonOp {
  template <typename C> bool operator()(C a, C b) const { return a > b; }
};
struct GreaterOrEqualOp : ComparisonOp {
  template <typename C> bool operator()(C a, C b) const { return a >= b; }
};

struct AndOp : BoolOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp : BoolOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp : BoolOp {
  bool operator()(bool a, bool b) const { return a != b; }
};
struct NotOp : BoolOp {
  bool operator()(bool x) const { return !x; }
};

struct BitwiseAndOp : IntegerOp {
  template <typename C> C operator()(C a, C b) const { return static_cast<C>(a & b); }
};
struct BitwiseOrOp : IntegerOp {
  template <typename C> C operator()(C a, C b) const { return static_cast<C>(a | b); }
};
struct BitwiseXorOp : IntegerOp {
  template <typename C> C operator()(C a, C b) const { return static_cast<C>(a ^ b); }
};
struct BitwiseNotOp : IntegerOp {
  template <typename C> C operator()(C x) const { return static_cast<C>(~x); }
};

// BitShift on unsigned integers; shifting by the type's width or more yields 0 (C++ leaves it undefined).
class BitShiftOp {
 public:
  template <typename T> static constexpr bool kAccepts = kIsInteger<T> && std::is_unsigned_v<T>;
  static constexpr bool kPredicate = false;

  absl::Status Init(const KernelInfo& info) {
    absl::StatusOr<std::string> direction = info.Attr<std::string>("direction");
    if (!direction.ok()) return direction.status();
    left_ = *direction == "LEFT";
    if (!left_ && *direction != "RIGHT") {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute direction must be \"LEFT\" or \"RIGHT\", got \"", *direction, "\""));
    }
    return absl::OkStatus();
  }
  template <typename C> C operator()(C x, C shift) const {
    if (shift >= sizeof(C) * 8) return C{0};
    return static_cast<C>(left_ ? x << shift : x >> shift);
  }

 private:
  bool left_ = true;
};

inline constexpr DataType kUnsignedTypes[] = {DataType::kUint8, DataType::kUint16, DataType::kUint32,
                                              DataType::kUint64};

// Equal-1 had broadcast/axis, -7 numpy broadcasting, -11 more types, -13 bfloat16, -19 strings.
REGISTER_KERNEL(kOnnx, "Equal", 1, 6, kAllTypes, BinaryKernel<EqualOp>);
REGISTER_KERNEL(kOnnx, "Equal", 7, 10, kAllTypes, BinaryKernel<EqualOp>);
REGISTER_KERNEL(kOnnx, "Equal", 11, 12, kAllTypes, BinaryKernel<EqualOp>);
REGISTER_KERNEL(kOnnx, "Equal", 13, 18, kAllTypes, BinaryKernel<EqualOp>);
REGISTER_KERNEL(kOnnx, "Equal", 19, kLatest, kAllTypes, BinaryKernel<EqualOp>);
// Less/Greater-1 had broadcast/axis, -7 numpy broadcasting, -9 integer types, -13 bfloat16.
REGISTER_KERNEL(kOnnx, "Less", 1, 6, kNumericTypes, BinaryKernel<LessOp>);
REGISTER_KERNEL(kOnnx, "Less", 7, 8, kNumericTypes, BinaryKernel<LessOp>);
REGISTER_KERNEL(kOnnx, "Less", 9, 12, kNumericTypes, BinaryKernel<LessOp>);
REGISTER_KERNEL(kOnnx, "Less", 13, kLatest, kNumericTypes, BinaryKernel<LessOp>);
REGISTER_KERNEL(kOnnx, "Greater", 1, 6, kNumericTypes, BinaryKernel<GreaterOp>);
REGISTER_KERNEL(kOnnx, "Greater", 7, 8, kNumericTypes, BinaryKernel<GreaterOp>);
REGISTER_KERNEL(kOnnx, "Greater", 9, 12, kNumericTypes, BinaryKernel<GreaterOp>);
REGISTER_KERNEL(kOnnx, "Greater", 13, kLatest, kNumericTypes, BinaryKernel<GreaterOp>);
// LessOrEqual/GreaterOrEqual-12, -16 bfloat16.
REGISTER_KERNEL(kOnnx, "LessOrEqual", 12, 15, kNumericTypes, BinaryKernel<LessOrEqualOp>);
REGISTER_KERNEL(kOnnx, "LessOrEqual", 16, kLatest, kNumericTypes, BinaryKernel<LessOrEqualOp>);
REGISTER_KERNEL(kOnnx, "GreaterOrEqual", 12, 15, kNumericTypes, BinaryKernel<GreaterOrEqualOp>);
REGISTER_KERNEL(kOnnx, "GreaterOrEqual", 16, kLatest, kNumericTypes, BinaryKernel<GreaterOrEqualOp>);
// And/Or/Xor-1 had broadcast/axis, -7 numpy broadcasting.
REGISTER_KERNEL(kOnnx, "And", 1, 6, kBoolType, BinaryKernel<AndOp>);
REGISTER_KERNEL(kOnnx, "And", 7, kLatest, kBoolType, BinaryKernel<AndOp>);
REGISTER_KERNEL(kOnnx, "Or", 1, 6, kBoolType, BinaryKernel<OrOp>);
REGISTER_KERNEL(kOnnx, "Or", 7, kLatest, kBoolType, BinaryKernel<OrOp>);
REGISTER_KERNEL(kOnnx, "Xor", 1, 6, kBoolType, BinaryKernel<XorOp>);
REGISTER_KERNEL(kOnnx, "Xor", 7, kLatest, kBoolType, BinaryKernel<XorOp>);
REGISTER_KERNEL(kOnnx, "Not", 1, kLatest, kBoolType, UnaryKernel<NotOp>);
REGISTER_KERNEL(kOnnx, "BitShift", 11, kLatest, kUnsignedTypes, BinaryKernel<BitShiftOp>);
REGISTER_KERNEL(kOnnx, "BitwiseAnd", 18, kLatest, kIntegerTypes, BinaryKernel<BitwiseAndOp>);
REGISTER_KERNEL(kOnnx, "BitwiseOr", 18, kLatest, kIntegerTypes, BinaryKernel<BitwiseOrOp>);
REGISTER_KERNEL(kOnnx, "BitwiseXor", 18, kLatest, kIntegerTypes, BinaryKernel<BitwiseXorOp>);
REGISTER_KERNEL(kOnnx, "BitwiseNot", 18, kLatest, kIntegerTypes, UnaryKernel<BitwiseNotOp>);

}  // namespace
}  // namespace onnxserve
