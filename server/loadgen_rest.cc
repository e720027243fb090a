#include "server/loadgen_rest.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace onnxserve::server {
namespace {

std::string RestModelPath(const LoadOptions& options) {
  return absl::StrCat("/v2/models/", options.model,
                      options.model_version.empty() ? "" : absl::StrCat("/versions/", options.model_version));
}

std::string RestUrl(const LoadOptions& options, const std::string& path) {
  return absl::StrCat(options.tls.ca_file.empty() ? "http://" : "https://", options.target, path);
}

size_t AppendToString(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

size_t Discard(char*, size_t size, size_t count, void*) { return size * count; }

// What every handle of the run shares: TLS files, the deadline, and the headers (--metadata and the body's).
void SetCommonOptions(CURL* easy, const LoadOptions& options, curl_slist* headers) {
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_ms));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  if (!options.tls.ca_file.empty()) {
    curl_easy_setopt(easy, CURLOPT_CAINFO, options.tls.ca_file.c_str());
    if (!options.tls.cert_file.empty()) {
      curl_easy_setopt(easy, CURLOPT_SSLCERT, options.tls.cert_file.c_str());
      curl_easy_setopt(easy, CURLOPT_SSLKEY, options.tls.key_file.c_str());
    }
  }
}

// The headers of every request: --metadata, and for a body with binary data its JSON length. "Expect:" keeps
// curl from waiting for a 100 Continue before bodies over 1 KiB, which would add a round trip to each call.
curl_slist* RestHeaders(const LoadOptions& options, const RestBody& body) {
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");
  headers = curl_slist_append(headers, "Content-Type: application/json");
  if (body.json_bytes) {
    headers = curl_slist_append(headers, absl::StrCat("Inference-Header-Content-Length: ", *body.json_bytes).c_str());
  }
  for (const auto& [key, value] : options.metadata) {
    headers = curl_slist_append(headers, absl::StrCat(key, ": ", value).c_str());
  }
  return headers;
}

using CurlHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using CurlHeaders = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

}  // namespace

absl::StatusOr<inference::ModelMetadataResponse> FetchRestMetadata(const LoadOptions& options) {
  CurlHandle easy(curl_easy_init(), curl_easy_cleanup);
  if (!easy) return absl::InternalError("curl_easy_init failed");
  CurlHeaders headers(RestHeaders(options, RestBody()), curl_slist_free_all);
  SetCommonOptions(easy.get(), options, headers.get());
  const std::string url = RestUrl(options, RestModelPath(options));
  std::string body;
  curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, AppendToString);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &body);
  const CURLcode code = curl_easy_perform(easy.get());
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  if (code != CURLE_OK || status != 200) {
    return absl::UnavailableError(absl::StrCat("metadata of model \"", options.model, "\" from ", url, ": ",
                                               code != CURLE_OK ? curl_easy_strerror(code)
                                                                : absl::StrCat("HTTP ", status, " ", body)));
  }
  inference::ModelMetadataResponse metadata;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(body, &metadata, parse).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(url, ": not KServe v2 model metadata: ", body));
  }
  return metadata;
}

RestConnection::RestConnection(const LoadOptions& options, const RestBody& body, int slots)
    : LoadConnection(options, slots), multi_(curl_multi_init()), headers_(RestHeaders(options, body), curl_slist_free_all),
      url_(RestUrl(options, RestModelPath(options) + "/infer")) {
  // Every slot's connection stays in the cache between its calls, whatever the number in flight.
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(slots));
  for (int i = 0; i < slots; ++i) {
    CURL* easy = curl_easy_init();
    SetCommonOptions(easy, options, headers_.get());
    curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.body.data());  // not copied: the body outlives the run
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.body.size()));
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, Discard);
    calls_.push_back({easy, {}});
    curl_easy_setopt(easy, CURLOPT_PRIVATE, &calls_.back());
  }
  for (Call& call : calls_) idle_.push_back(&call);
}

RestConnection::~RestConnection() {
  for (Call& call : calls_) curl_easy_cleanup(call.easy);
  curl_multi_cleanup(multi_);
}

void RestConnection::Send() {
  Call* call = idle_.back();
  idle_.pop_back();
  call->sent = Clock::now();
  curl_multi_add_handle(multi_, call->easy);
}

int RestConnection::Wait(Clock::time_point until) {
  const int done = Progress();
  if (done > 0) return done;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
  curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::clamp<int64_t>(ms, 0, 1000)), nullptr);
  return Progress();
}

// Moves every transfer on; records and frees the finished ones. Returns how many finished.
int RestConnection::Progress() {
  int running = 0;
  curl_multi_perform(multi_, &running);
  int done = 0, left = 0;
  while (CURLMsg* message = curl_multi_info_read(multi_, &left)) {
    if (message->msg != CURLMSG_DONE) continue;
    Call* call = nullptr;
    curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &call);
    long status = 0;
    curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
    const int code = message->data.result == CURLE_OK ? static_cast<int>(status) : -message->data.result;
    tally_.Record(code, code == 200, call->sent);
    curl_multi_remove_handle(multi_, message->easy_handle);
    idle_.push_back(call);
    ++done;
  }
  return done;
}

std::string HttpCodeName(int code) {
  return code >= 0 ? absl::StrCat("HTTP_", code)
                   : absl::StrCat("curl: ", curl_easy_strerror(static_cast<CURLcode>(-code)));
}

}  // namespace onnxserve::server
