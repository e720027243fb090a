// onnxserve check: what a model imports, takes and returns, which ops it uses, and whether it can run;
// with --plan, what the graph passes did and the plan one run executes.
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

std::string ValueNames(const std::vector<ir::Value*>& values) {
  std::vector<std::string> names;
  for (const ir::Value* value : values) names.push_back(value == nullptr ? "\"\"" : value->name());
  return absl::StrJoin(names, ", ");
}

// What a fused node applies last, as " + HardSwish" or " + Clip(0, 6)"; "" for other nodes.
std::string FusedActivation(const ir::Node& node) {
  const ir::Attribute* activation = node.FindAttribute("activation");
  if (activation == nullptr || activation->s.empty()) return "";
  const ir::Attribute* params = node.FindAttribute("activation_params");
  if (params == nullptr || params->floats.empty()) return " + " + activation->s;
  return " + " + activation->s + "(" + absl::StrJoin(params->floats, ", ") + ")";
}

// What each pass changed, then the steps one run executes (with their fused activations).
void PrintPlan(const Session& session) {
  std::cout << "passes:\n";
  for (const auto& report : session.pass_reports()) {
    std::cout << "  " << report.pass << ": " << report.changes.size() << " change(s)\n";
    for (const auto& change : report.changes) std::cout << "    " << change << "\n";
  }
  const ir::Graph& graph = session.plan().graph();
  std::cout << "plan: " << graph.num_nodes() << " step(s), " << graph.constants().size() << " constant(s)\n";
  for (const ir::Node* node : graph.nodes()) {
    std::cout << "  " << node->Label() << FusedActivation(*node) << " [" << node->domain()
              << "]: " << ValueNames(node->inputs()) << " -> " << ValueNames(node->outputs()) << "\n";
  }
}

}  // namespace

int CheckCommand(int argc, char** argv) {
  const OptionTable options = {
      {.name = "plan", .kind = ValueKind::kBool, .help = "also print what each pass changed and the plan's steps"}};
  auto args = ParseArgs(options, argc, argv, 2);
  const char* usage = "usage: onnxserve check MODEL.onnx [--plan]\n";
  if (args.ok() && args->help) {
    std::cout << usage << OptionsHelp(options);
    return 0;
  }
  if (!args.ok() || args->positional.size() != 1) {
    std::cerr << (args.ok() ? "" : absl::StrCat(args.status().message(), "\n")) << usage << OptionsHelp(options);
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
  if (args->Bool("plan")) PrintPlan(**session);
  std::cout << "status: ok\n";
  return 0;
}

}  // namespace onnxserve::cli
