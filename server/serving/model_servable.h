// The innermost servable: runs one model version's Session on a request's inputs, on the caller's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "runtime/exec/session.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

class ModelServable final : public Servable {
 public:
  // `label` names the version in errors ("model \"m\" version 1"): the
  // runtime knows its nodes, not the name it is served under. A run stops at the request's deadline, once it
  // is cancelled, or after `execution_timeout` (config parameter execution_timeout_ms).
  ModelServable(std::shared_ptr<const Session> session, std::vector<std::string> input_names, std::vector<std::string> output_names,
                std::string label, absl::Duration execution_timeout);

  // Answers on the calling thread, before returning.
  void Run(ServableRequest request, ServableDone done) override;

 private:
  const std::shared_ptr<const Session> session_;
  const std::vector<std::string> input_names_;
  const std::vector<std::string> output_names_;
  const std::string label_;
  const absl::Duration execution_timeout_;
};

}  // namespace onnxserve::server
