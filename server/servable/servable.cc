#include "server/servable/servable.h"

#include <condition_variable>
#include <mutex>
#include <utility>

namespace onnxserve::server {

ServableResponse RunAndWait(Servable& servable, ServableRequest request) {
  std::mutex mu;
  std::condition_variable answered;
  std::optional<ServableResponse> response;
  servable.Run(std::move(request), [&](ServableResponse r) {
    std::lock_guard<std::mutex> lock(mu);
    response = std::move(r);
    answered.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  answered.wait(lock, [&] { return response.has_value(); });
  return *std::move(response);
}

}  // namespace onnxserve::server
