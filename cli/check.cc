// onnxserve check: what a model imports, takes and returns, which ops it uses, and whether it can run.
#include <iostream>
#include <map>

#include "cli/args.h"
#include "cli/commands.h"
#include "runtime/exec/plan.h"
#include "runtime/exec/session.h"

namespace onnxserve::cli {
namespace {

void CountOps(const Graph& graph, std::map<std::string, int>& counts) {
  for (int i = 0; i < graph.proto().node_size(); ++i) {
    const auto& node = graph.proto().node(i);
    ++counts[CanonicalDomain(node.domain()) + " " + node.op_type()];
    for (const auto& attr : node.attribute()) {
      if (const Graph* sub = graph.Subgraph(i, attr.name())) CountOps(*sub, counts);
    }
  }
}

}  // namespace

int CheckCommand(int argc, char** argv) {
  auto args = ParseArgs(argc, argv, 2, {});
  if (!args.ok() || args->positional.size() != 1) {
    std::cerr << "usage: onnxserve check MODEL.onnx\n";
    return 2;
  }
  auto model = Model::LoadFromFile(args->positional[0]);
  if (!model.ok()) {
    std::cerr << "onnxserve check: " << model.status() << "\n";
    return 1;
  }
  const Model& m = **model;
  std::cout << "ir_version: " << m.ir_version() << "\nopsets:\n";
  for (const auto& [domain, version] : m.opsets()) std::cout << "  " << domain << " " << version << "\n";
  std::cout << "inputs:\n";
  for (const auto& in : m.graph().inputs()) std::cout << "  " << in.name << ": " << in.DebugString() << "\n";
  std::cout << "outputs:\n";
  for (const auto& out : m.graph().outputs()) {
    std::cout << "  " << out.name << ": " << out.DebugString() << "\n";
  }
  std::map<std::string, int> counts;
  CountOps(m.graph(), counts);
  std::cout << "nodes:\n";
  for (const auto& [op, n] : counts) std::cout << "  " << op << ": " << n << "\n";
  const auto unsupported = FindUnsupportedNodes(m);
  if (!unsupported.empty()) {
    std::cout << "unsupported:\n";
    for (const auto& u : unsupported) {
      std::cout << "  " << u.domain << " " << u.op_type << " (opset " << u.opset << ") node \"" << u.node
                << "\"" << (u.registered.empty() ? "" : " registered versions " + u.registered) << "\n";
    }
    std::cout << "status: cannot run\n";
    return 1;
  }
  auto session = Session::Create(*model);
  if (!session.ok()) {
    std::cout << "status: cannot run: " << session.status() << "\n";
    return 1;
  }
  std::cout << "status: ok\n";
  return 0;
}

}  // namespace onnxserve::cli
