// The memory this process may use: the machine's, or its cgroup's limit where that is lower (a container's
// memory limit). `serve` sizes its default run memory budget from it, so that one hostile model cannot make
// a single run take the whole machine and have the kernel end the server.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace onnxserve::server {

// Bytes of "MemTotal:" in /proc/meminfo's text, or nullopt when it has none.
std::optional<int64_t> MemTotalBytes(std::string_view meminfo);
// A cgroup memory limit file's text (v2 memory.max, v1 memory.limit_in_bytes): its bytes, or nullopt for
// "max" or anything else that is no limit.
std::optional<int64_t> CgroupLimitBytes(std::string_view limit_file);
// The smaller of the two that are known, or nullopt when neither is.
std::optional<int64_t> UsableMemoryBytes();

}  // namespace onnxserve::server
