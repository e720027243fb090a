#include "runtime/registry/registry.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace onnxserve {

bool KernelDef::Accepts(DataType type) const {
  return types.empty() || std::find(types.begin(), types.end(), type) != types.end();
}

std::string KernelDef::VersionRange() const {
  if (last_version == kLatest) return absl::StrCat(since_version, "+");
  if (last_version == since_version) return absl::StrCat(since_version);
  return absl::StrCat(since_version, "-", last_version);
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry;
  return *registry;
}

bool KernelRegistry::Register(std::string_view domain, std::string_view op_type, int since, int last,
                              absl::Span<const DataType> types, KernelFactory create,
                              std::string_view file) {
  KernelDef def;
  def.domain = std::string(domain);
  def.op_type = std::string(op_type);
  def.since_version = since;
  def.last_version = last;
  for (DataType t : types) {
    if (t != DataType::kUndefined) def.types.push_back(t);
  }
  def.create = create;
  def.file = std::filesystem::path(file).filename().string();
  defs_.push_back(std::move(def));
  return true;
}

const KernelDef* KernelRegistry::Find(std::string_view domain, std::string_view op_type,
                                      int64_t opset) const {
  const std::string canonical = CanonicalDomain(domain);
  for (const KernelDef& def : defs_) {
    if (def.domain == canonical && def.op_type == op_type && def.since_version <= opset &&
        opset <= def.last_version) {
      return &def;
    }
  }
  return nullptr;
}

std::vector<const KernelDef*> KernelRegistry::Versions(std::string_view domain,
                                                       std::string_view op_type) const {
  const std::string canonical = CanonicalDomain(domain);
  std::vector<const KernelDef*> out;
  for (const KernelDef& def : defs_) {
    if (def.domain == canonical && def.op_type == op_type) out.push_back(&def);
  }
  std::sort(out.begin(), out.end(),
            [](const KernelDef* a, const KernelDef* b) { return a->since_version < b->since_version; });
  return out;
}

std::vector<const KernelDef*> KernelRegistry::All() const {
  std::vector<const KernelDef*> out;
  for (const KernelDef& def : defs_) out.push_back(&def);
  std::sort(out.begin(), out.end(), [](const KernelDef* a, const KernelDef* b) {
    return std::tie(a->domain, a->op_type, a->since_version) <
           std::tie(b->domain, b->op_type, b->since_version);
  });
  return out;
}

absl::Status KernelRegistry::Validate() const {
  const auto all = All();
  for (size_t i = 0; i < all.size(); ++i) {
    const KernelDef& def = *all[i];
    if (def.since_version < 1 || def.last_version < def.since_version) {
      return absl::InternalError(absl::StrCat(def.domain, " ", def.op_type, " (", def.file,
                                              "): empty version range ", def.VersionRange()));
    }
    if (i > 0 && all[i - 1]->domain == def.domain && all[i - 1]->op_type == def.op_type &&
        all[i - 1]->last_version >= def.since_version) {
      return absl::InternalError(absl::StrCat(def.domain, " ", def.op_type, ": versions ",
                                              all[i - 1]->VersionRange(), " (", all[i - 1]->file, ") and ",
                                              def.VersionRange(), " (", def.file, ") overlap"));
    }
  }
  return absl::OkStatus();
}

}  // namespace onnxserve
