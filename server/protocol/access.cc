#include "server/protocol/access.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace onnxserve::server {
namespace {

constexpr absl::string_view kGroupNames[] = {
#define ONNXSERVE_API_GROUP_NAME(id, name) name,
    ONNXSERVE_API_GROUPS(ONNXSERVE_API_GROUP_NAME)
#undef ONNXSERVE_API_GROUP_NAME
};

std::optional<ApiGroup> FindGroup(absl::string_view name) {
  for (size_t i = 0; i < kNumApiGroups; ++i) {
    if (kGroupNames[i] == name) return static_cast<ApiGroup>(i);
  }
  return std::nullopt;
}

std::string KnownGroups() {
  std::string known;
  for (absl::string_view name : kGroupNames) absl::StrAppend(&known, known.empty() ? "" : ", ", name);
  return known;
}

// gRPC metadata keys allow [0-9a-z-_.], a subset of HTTP's header name characters, so one rule serves both.
bool IsValidKey(absl::string_view key) {
  for (char c : key) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return !key.empty();
}

// Visible ASCII without spaces: what both protocols carry unchanged (HTTP servers trim blanks at the ends).
bool IsValidValue(absl::string_view value) {
  for (char c : value) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return !value.empty();
}

}  // namespace

absl::string_view ApiGroupName(ApiGroup group) { return kGroupNames[static_cast<size_t>(group)]; }

absl::Status AccessRules::Add(absl::string_view flag, absl::string_view spec) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", spec, ": ", why, " (expected <group>[,<group>...]:<key>=<value>)"));
  };
  const std::vector<absl::string_view> groups_and_header = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (groups_and_header.size() != 2) return bad("no ':' after the group list");
  const std::vector<absl::string_view> key_and_value = absl::StrSplit(groups_and_header[1], absl::MaxSplits('=', 1));
  if (key_and_value.size() != 2) return bad("no '=' between the key and the value");
  Restriction restriction{absl::AsciiStrToLower(key_and_value[0]), std::string(key_and_value[1])};
  if (!IsValidKey(restriction.key)) return bad("the key must be non-empty and use only [A-Za-z0-9-_.]");
  if (!IsValidValue(restriction.value)) return bad("the value must be non-empty visible ASCII without spaces");
  if (groups_and_header[0].empty()) return bad("the group list is empty");
  for (absl::string_view name : absl::StrSplit(groups_and_header[0], ',')) {
    const std::optional<ApiGroup> group = FindGroup(name);
    if (!group) return bad(absl::StrCat("unknown group \"", name, "\"; the groups are ", KnownGroups()));
    auto& rule = rules_[static_cast<size_t>(*group)];
    // Two values for one group would leave which of them applies to the reader of the command line.
    if (rule) return bad(absl::StrCat("group \"", name, "\" is already restricted"));
    rule = restriction;
  }
  return absl::OkStatus();
}

bool AccessRules::empty() const {
  for (const auto& rule : rules_) {
    if (rule) return false;
  }
  return true;
}

absl::Status AccessRules::Check(ApiGroup group, HeaderLookup header) const {
  const std::optional<Restriction>& rule = restriction(group);
  if (!rule) return absl::OkStatus();
  const std::string name = absl::StrCat(header_prefix_, rule->key);
  const std::optional<absl::string_view> given = header(name);
  if (given && ConstantTimeEquals(*given, rule->value)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("the ", ApiGroupName(group), " API is restricted: send the header \"",
                                                  name, "\" with the value the server was given"));
}

bool ConstantTimeEquals(absl::string_view given, absl::string_view expected) {
  // Every byte of `expected` is compared whatever came before; a length mismatch is folded in at the end.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= g ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

}  // namespace onnxserve::server
