// What decoding a REST request holds in memory at once (server/protocol/rest_json.h), against the size of its
// body: --max-request-bytes bounds the body, and the decode must not turn it into many times that. Counted by
// replacing the global operator new and delete of this test binary, so each test sees every byte its decode
// holds, and nothing depends on the machine or its timing.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include <gtest/gtest.h>

#include "server/protocol/rest_json.h"

namespace {

std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void Counted(void* p) {
  const int64_t now = live_bytes += static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace

void* operator new(size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  Counted(p);
  return p;
}

void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  live_bytes -= static_cast<int64_t>(malloc_usable_size(p));
  std::free(p);
}

void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace onnxserve::server {
namespace {

// The most bytes the heap held beyond what it held before, while `decode` ran.
template <typename Fn>
int64_t PeakBytesOf(Fn decode) {
  const int64_t before = live_bytes.load();
  peak_bytes = before;
  decode();
  return peak_bytes.load() - before;
}

// A request whose input "x" holds `rows` rows of one FP32 element, nested as [[0],[0],...] (a form clients
// may send: data nests to any depth) or flat.
std::string BodyOf(int64_t rows, bool nested) {
  std::string data = "[";
  for (int64_t i = 0; i < rows; ++i) data += i == 0 ? "" : ",", data += nested ? "[0]" : "0";
  data += "]";
  return R"({"inputs":[{"name":"x","datatype":"FP32","shape":[)" + std::to_string(rows) + R"(,1],"data":)" + data +
         "}]}";
}

// A nested array in the document cost a container with a heap vector for every row: 16 MB of "[0]," held
// 440 MB in the server while it decoded, some 27 times the body, where the rows' values need 4 bytes each.
TEST(RestJsonMemoryTest, DecodingNestedDataHoldsAFewTimesTheBodyAtMost) {
  for (const bool nested : {false, true}) {
    const std::string body = BodyOf(1 << 20, nested);
    const int64_t peak = PeakBytesOf([&body] {
      auto request = DecodeRestInferRequest(body, std::nullopt);
      ASSERT_TRUE(request.ok()) << request.status();
      ASSERT_EQ(request->wire.raw_input_contents(0).size(), size_t{4} << 20);
    });
    EXPECT_LT(peak, 10 * static_cast<int64_t>(body.size())) << (nested ? "nested" : "flat") << ": " << peak
                                                             << " bytes for a body of " << body.size();
  }
}

}  // namespace
}  // namespace onnxserve::server
