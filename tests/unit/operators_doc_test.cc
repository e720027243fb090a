// docs/operators.md is generated from the registry; this test fails when the committed file is stale.
#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

#ifndef ONNXSERVE_CLI
#error "ONNXSERVE_CLI (the onnxserve executable) must be defined by the build"
#endif
#ifndef ONNXSERVE_OPERATORS_DOC
#error "ONNXSERVE_OPERATORS_DOC (docs/operators.md) must be defined by the build"
#endif

namespace {

// The standard output of `command`, or "" when it cannot run.
std::string RunCommand(const std::string& command, int* exit_status) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (pipe == nullptr) return "";
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) out.append(buffer.data(), n);
  *exit_status = pclose(pipe.release());
  return out;
}

// "line N: expected ... got ..." for the first line where the two texts differ.
std::string FirstDifference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string el, al;
  for (int line = 1;; ++line) {
    const bool has_e = static_cast<bool>(std::getline(e, el));
    const bool has_a = static_cast<bool>(std::getline(a, al));
    if (!has_e && !has_a) return "none";
    if (has_e != has_a || el != al) {
      return "line " + std::to_string(line) + ": generated \"" + (has_e ? el : "<end>") + "\", committed \"" +
             (has_a ? al : "<end>") + "\"";
    }
  }
}

TEST(OperatorsDocTest, CommittedDocMatchesTheRegistry) {
  const std::string command = std::string("'") + ONNXSERVE_CLI + "' ops --format markdown";
  int status = -1;
  const std::string generated = RunCommand(command, &status);
  ASSERT_EQ(status, 0) << command << " failed";

  std::ifstream file(ONNXSERVE_OPERATORS_DOC);
  std::stringstream committed;
  committed << file.rdbuf();
  EXPECT_TRUE(generated == committed.str())
      << ONNXSERVE_OPERATORS_DOC << " is out of date with the kernel registry; regenerate it with\n  "
      << command << " > " << ONNXSERVE_OPERATORS_DOC << "\nfirst difference: "
      << FirstDifference(generated, committed.str());
}

}  // namespace
