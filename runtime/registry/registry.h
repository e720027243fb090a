// The versioned operator registry. Each kernel registers itself beside its code for a range of spec
// versions, (domain, op_type, since_version .. last_version), exactly as the ONNX spec versions the op:
//
//   REGISTER_KERNEL(kOnnx, "Relu", 14, kLatest, kReluTypes, Relu);
//
// A node resolves through the model's opset for its domain: the kernel whose range holds that opset.
// Ranges of one op never overlap (Validate() checks; a unit test checks them against the ONNX schemas).
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/core/status_macros.h"
#include "runtime/model/model.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

inline constexpr std::string_view kOnnx = kOnnxDomain;
inline constexpr std::string_view kMl = kMlDomain;
inline constexpr std::string_view kTraining = kTrainingDomain;
inline constexpr std::string_view kPreview = kPreviewDomain;
inline constexpr std::string_view kInternal = kInternalDomain;
// The newest opset onnxserve knows of; a range ending at kLatest is open.
inline constexpr int kLatest = std::numeric_limits<int>::max();
inline constexpr int kNewestKnownOpset = 28;

// Type sets for registrations: the element types a kernel accepts for its first input (what `onnxserve
// ops` prints). An empty set means the kernel checks types itself.
inline constexpr DataType kFloatTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                           DataType::kBFloat16};
inline constexpr DataType kSignedTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                            DataType::kBFloat16, DataType::kInt8, DataType::kInt16,
                                            DataType::kInt32, DataType::kInt64};
inline constexpr DataType kNumericTypes[] = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
    DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUint8, DataType::kUint16,
    DataType::kUint32, DataType::kUint64};
inline constexpr DataType kIntegerTypes[] = {DataType::kInt8, DataType::kInt16, DataType::kInt32,
                                             DataType::kInt64, DataType::kUint8, DataType::kUint16,
                                             DataType::kUint32, DataType::kUint64};
inline constexpr DataType kAllTypes[] = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
    DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUint8, DataType::kUint16,
    DataType::kUint32, DataType::kUint64, DataType::kBool, DataType::kString};
inline constexpr DataType kBoolType[] = {DataType::kBool};
inline constexpr DataType kAnyType[] = {DataType::kUndefined};  // Sentinel: no check.

using KernelFactory = absl::StatusOr<std::unique_ptr<OpKernel>> (*)(const KernelInfo&);

struct KernelDef {
  std::string domain;
  std::string op_type;
  int since_version;
  int last_version;
  std::vector<DataType> types;  // empty: the kernel checks types itself
  KernelFactory create;
  std::string file;  // where the registration is, for error messages and docs

  bool Accepts(DataType type) const;
  std::string VersionRange() const;  // "7-12", "13+"
};

class KernelRegistry {
 public:
  static KernelRegistry& Global();

  bool Register(std::string_view domain, std::string_view op_type, int since, int last,
                absl::Span<const DataType> types, KernelFactory create, std::string_view file);

  // The kernel for `op_type` in `domain` at the model's `opset`, or nullptr.
  const KernelDef* Find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  // Every registration of one op, oldest first.
  std::vector<const KernelDef*> Versions(std::string_view domain, std::string_view op_type) const;
  // All registrations sorted by domain, op_type, since_version.
  std::vector<const KernelDef*> All() const;
  // Fails if two ranges of one op overlap or a range is empty.
  absl::Status Validate() const;

 private:
  std::vector<KernelDef> defs_;
};

// Kernels are default-constructed, then Init(info) parses attributes and prepares constants when the class
// has one.
template <typename K>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const KernelInfo& info) {
  auto kernel = std::make_unique<K>();
  if constexpr (requires(K& k) { k.Init(info); }) {
    RETURN_IF_ERROR(kernel->Init(info));
  } else {
    (void)info;
  }
  return kernel;
}

}  // namespace onnxserve

// REGISTER_KERNEL(domain, "Op", since, last, types, KernelClass...): at namespace scope beside the kernel.
#define REGISTER_KERNEL(domain, op, since, last, types, ...)                                  \
  [[maybe_unused]] static const bool ONNXSERVE_CONCAT(kKernelRegistered_, __COUNTER__) =      \
      ::onnxserve::KernelRegistry::Global().Register(domain, op, since, last, types,          \
                                                     &::onnxserve::CreateKernel<__VA_ARGS__>, \
                                                     __FILE__)
