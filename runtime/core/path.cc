#include "runtime/core/path.h"

#include <system_error>

namespace onnxserve {

namespace fs = std::filesystem;

absl::StatusOr<fs::path> ResolveInside(const fs::path& root, const fs::path& relative) {
  std::error_code ec;
  const fs::path base = fs::canonical(root, ec);
  if (ec) return absl::NotFoundError("the folder does not exist");
  const fs::path resolved = fs::canonical(base / relative, ec);
  if (ec) return absl::NotFoundError("no such file or folder");
  // Both are canonical, so a lexical comparison is exact: "." is the root itself, ".." leads out of it,
  // and an empty result means another root name altogether.
  const fs::path inside = resolved.lexically_relative(base);
  if (inside.empty() || *inside.begin() == "." || *inside.begin() == "..") {
    return absl::PermissionDeniedError("resolves outside the folder");
  }
  return resolved;
}

}  // namespace onnxserve
