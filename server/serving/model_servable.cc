#include "server/serving/model_servable.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace onnxserve::server {

ModelServable::ModelServable(std::shared_ptr<const Session> session, std::vector<std::string> input_names,
                             std::vector<std::string> output_names, std::string label,
                             absl::Duration execution_timeout)
    : session_(std::move(session)), input_names_(std::move(input_names)), output_names_(std::move(output_names)),
      label_(std::move(label)), execution_timeout_(execution_timeout) {}

void ModelServable::Run(ServableRequest request, ServableDone done) {
  const absl::Time start = absl::Now();
  std::vector<std::pair<std::string, Tensor>> feeds;
  feeds.reserve(request.inputs.size());
  for (size_t i = 0; i < request.inputs.size(); ++i) feeds.emplace_back(input_names_[i], std::move(request.inputs[i]));
  const RunLimits limits(std::min(request.control.deadline, start + execution_timeout_),
                         std::move(request.control.cancelled));
  ServableResponse response{session_->Run(feeds, output_names_, limits), {}};
  response.timing = {start, absl::Now() - start, request.rows};
  if (!response.outputs.ok()) {
    const absl::Status& error = response.outputs.status();
    response.outputs = absl::Status(error.code(), absl::StrCat(label_, ": ", error.message()));
  }
  done(std::move(response));
}

}  // namespace onnxserve::server
