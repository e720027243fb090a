// onnxserve load --protocol http: KServe v2 REST inference over HTTP/1.1 keep-alive connections, with JSON
// tensors or Triton's binary tensor data extension, through libcurl's multi interface.
#pragma once

#include <curl/curl.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpc_service.pb.h"
#include "server/load_options.h"
#include "server/loadgen_run.h"
#include "server/protocol/rest_json.h"

namespace onnxserve::server {

// GET /v2/models/NAME[/versions/V], read into the gRPC message (the REST JSON has the same field names).
absl::StatusOr<inference::ModelMetadataResponse> FetchRestMetadata(const LoadOptions& options);

// One REST thread: `slots` keep-alive connections on one curl multi handle, each with one call in flight at a
// time (HTTP/1.1 has no multiplexing), all posting the same body. curl_global_init must have run.
class RestConnection final : public LoadConnection {
 public:
  RestConnection(const LoadOptions& options, const RestBody& body, int slots);
  ~RestConnection() override;
  RestConnection(const RestConnection&) = delete;
  RestConnection& operator=(const RestConnection&) = delete;

 private:
  void Send() override;
  int Wait(Clock::time_point until) override;

  struct Call {
    CURL* easy;
    Clock::time_point sent;
  };

  int Progress();

  CURLM* multi_;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers_;
  const std::string url_;
  std::deque<Call> calls_;  // a deque: CURLOPT_PRIVATE points into it
  std::vector<Call*> idle_;
};

// A Tally code of RestConnection as the report names it: "HTTP_200", or curl's message for a transport error.
std::string HttpCodeName(int code);

}  // namespace onnxserve::server
