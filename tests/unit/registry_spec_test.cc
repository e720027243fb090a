// The registry against the ONNX spec: for every registered op, the registered version ranges must be
// exactly the spec's, one per since_version, [since, next_since - 1], the newest open (kLatest).
//
// Two sources: the onnx C++ library's schemas (Debian's onnx 1.12 knows ai.onnx up to opset 17, ai.onnx.ml
// up to 3), and for newer versions the spec changelogs in ONNXSERVE_ONNX_SPEC_DIR (Changelog.md,
// Changelog-ml.md). Without the changelogs the second half is skipped.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "onnx/defs/schema.h"
#include "runtime/registry/registry.h"

#ifndef ONNXSERVE_ONNX_SPEC_DIR
#define ONNXSERVE_ONNX_SPEC_DIR ""
#endif

namespace onnxserve {
namespace {

using OpKey = std::pair<std::string, std::string>;  // (canonical domain, op type)

struct SpecVersions {
  std::set<int> since;
  std::set<int> deprecated;
};
using SpecTable = std::map<OpKey, SpecVersions>;

using Range = std::pair<int, int>;  // [since, last]

std::string Canonical(const std::string& domain) { return domain.empty() ? std::string(kOnnx) : domain; }

SpecTable SchemaVersions() {
  SpecTable table;
  for (const onnx::OpSchema& schema : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    SpecVersions& v = table[{Canonical(schema.domain()), schema.Name()}];
    v.since.insert(schema.SinceVersion());
    if (schema.Deprecated()) v.deprecated.insert(schema.SinceVersion());
  }
  return table;
}

// The newest opset of each domain the onnx library knows.
std::map<std::string, int> SchemaHorizons() {
  std::map<std::string, int> horizons;
  for (const auto& [domain, range] : onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map()) {
    horizons[Canonical(domain)] = range.second;
  }
  return horizons;
}

// Reads the op headings of a spec changelog: "# ai.onnx.ml" starts a domain, and
// `### <a name="Op-N"></a>**Op-N** (deprecated)</a>` is version N of Op (named "ai.onnx.ml.Op-N" outside
// the default domain).
void ParseChangelog(const std::filesystem::path& path, SpecTable& table) {
  std::ifstream in(path);
  std::string line, domain;
  const std::string anchor = "### <a name=\"";
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) {
      domain = line.substr(2, line.find(' ', 2) - 2);
    } else if (line.rfind(anchor, 0) == 0) {
      std::string name = line.substr(anchor.size(), line.find('"', anchor.size()) - anchor.size());
      if (name.rfind(domain + ".", 0) == 0) name.erase(0, domain.size() + 1);  // "ai.onnx.ml.Op-N"
      const size_t dash = name.rfind('-');
      SpecVersions& v = table[{domain, name.substr(0, dash)}];
      const int since = std::stoi(name.substr(dash + 1));
      v.since.insert(since);
      if (line.find("(deprecated)") != std::string::npos) v.deprecated.insert(since);
    }
  }
}

// One range per since version, [since, next since - 1], the newest open.
std::vector<Range> SpecRanges(const std::set<int>& since) {
  std::vector<Range> ranges;
  for (auto it = since.begin(); it != since.end(); ++it) {
    const auto next = std::next(it);
    ranges.push_back({*it, next == since.end() ? kLatest : *next - 1});
  }
  return ranges;
}

// What can be known up to opset `horizon`: the ranges starting by then, with ends capped at it.
std::vector<Range> Clip(std::vector<Range> ranges, int horizon) {
  std::erase_if(ranges, [&](const Range& r) { return r.first > horizon; });
  for (Range& r : ranges) r.second = std::min(r.second, horizon);
  return ranges;
}

std::string RangeText(const Range& r) {
  if (r.second == kLatest) return absl::StrCat(r.first, "+");
  return r.first == r.second ? absl::StrCat(r.first) : absl::StrCat(r.first, "-", r.second);
}

std::string SpecText(const SpecVersions& spec) {
  std::vector<std::string> parts;
  for (const Range& r : SpecRanges(spec.since)) {
    parts.push_back(RangeText(r) + (spec.deprecated.count(r.first) ? " (deprecated)" : ""));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

// Every registered op whose ranges differ from the spec's up to each domain's horizon, as messages naming
// the op, the spec's ranges and the registered ones. onnxserve's internal domain (fused kernels only the
// planner emits) has no spec and is left out.
std::vector<std::string> Mismatches(const SpecTable& spec, const std::map<std::string, int>& horizons,
                                    int default_horizon, const std::string& source) {
  std::map<OpKey, std::vector<const KernelDef*>> registered;
  for (const KernelDef* def : KernelRegistry::Global().All()) {
    if (def->domain != kInternal) registered[{def->domain, def->op_type}].push_back(def);
  }
  std::vector<std::string> errors;
  for (const auto& [key, defs] : registered) {
    const auto h = horizons.find(key.first);
    const int horizon = h == horizons.end() ? default_horizon : h->second;
    const auto s = spec.find(key);
    const SpecVersions versions = s == spec.end() ? SpecVersions{} : s->second;
    std::vector<Range> ours;
    std::set<std::string> files;
    for (const KernelDef* def : defs) {
      ours.push_back({def->since_version, def->last_version});
      files.insert(def->file);
    }
    if (Clip(ours, horizon) == Clip(SpecRanges(versions.since), horizon)) continue;
    std::vector<std::string> ours_text;
    for (const Range& r : ours) ours_text.push_back(RangeText(r));
    errors.push_back(absl::StrCat(key.first, " ", key.second, " (", absl::StrJoin(files, ", "),
                                  "): spec versions ", SpecText(versions), " per ", source, "; registered ",
                                  absl::StrJoin(ours_text, ", "),
                                  horizon == kLatest ? "" : absl::StrCat(" (compared up to opset ", horizon, ")")));
  }
  return errors;
}

TEST(RegistrySpecTest, RegistryIsNotEmpty) { EXPECT_FALSE(KernelRegistry::Global().All().empty()); }

TEST(RegistrySpecTest, VersionsMatchTheOnnxSchemas) {
  for (const std::string& error : Mismatches(SchemaVersions(), SchemaHorizons(), 0, "the onnx schemas")) {
    ADD_FAILURE() << error;
  }
}

class ChangelogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path dir = ONNXSERVE_ONNX_SPEC_DIR;
    if (!std::filesystem::exists(dir / "Changelog.md")) {
      GTEST_SKIP() << "no ONNX spec changelog at \"" << dir.string()
                   << "/Changelog.md\": versions newer than the onnx library's schemas are not checked "
                      "(configure with -DONNXSERVE_ONNX_SPEC_DIR=<onnx docs folder>)";
    }
    ParseChangelog(dir / "Changelog.md", spec_);
    if (std::filesystem::exists(dir / "Changelog-ml.md")) ParseChangelog(dir / "Changelog-ml.md", spec_);
  }

  SpecTable spec_;
};

// Guards the parser: the changelogs must list every version the schemas know.
TEST_F(ChangelogTest, ListsEverySchemaVersion) {
  for (const auto& [key, versions] : SchemaVersions()) {
    const auto it = spec_.find(key);
    for (int since : versions.since) {
      EXPECT_TRUE(it != spec_.end() && it->second.since.count(since))
          << key.first << " " << key.second << "-" << since << " is missing from the parsed changelogs";
    }
  }
}

// The other direction: every operator the spec changelogs name, in every domain, has kernels (their ranges
// are then checked above), so a missing operator fails here by name.
TEST_F(ChangelogTest, EveryOperatorOfTheSpecIsRegistered) {
  std::set<OpKey> registered;
  for (const KernelDef* def : KernelRegistry::Global().All()) registered.insert({def->domain, def->op_type});
  for (const auto& [key, versions] : spec_) {
    EXPECT_TRUE(registered.contains(key)) << key.first << " " << key.second << " (spec versions "
                                          << SpecText(versions) << ") has no kernel";
  }
}

TEST_F(ChangelogTest, VersionsMatchTheSpecChangelogs) {
  for (const std::string& error : Mismatches(spec_, {}, kLatest, "the spec changelog")) {
    ADD_FAILURE() << error;
  }
}

}  // namespace
}  // namespace onnxserve
