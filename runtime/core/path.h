// Confining file names read from models and model repositories to a folder, after symlinks: a name that
// passes a lexical check ("no .., not absolute") may still leave the folder through a symlink.
#pragma once

#include <filesystem>

#include "absl/status/statusor.h"

namespace onnxserve {

// `root / relative` with every symlink, `.` and `..` resolved, when it exists and lies strictly inside
// `root` (itself resolved). NOT_FOUND when it does not exist, PERMISSION_DENIED when it resolves to `root`
// or outside it. The messages name no path: callers say what they looked for, and decide whether "outside"
// and "missing" may be told apart.
absl::StatusOr<std::filesystem::path> ResolveInside(const std::filesystem::path& root,
                                                    const std::filesystem::path& relative);

}  // namespace onnxserve
