// ModelStreamInfer on gRPC's async API (grpc_poller.h).
#pragma once

#include "server/protocol/grpc_poller.h"
#include "server/protocol/service.h"

namespace onnxserve::server {

// Asks gRPC for the next ModelStreamInfer call of `service` on `poller`; each call that arrives asks for the
// next. Both must outlive the call (the poller's Stop waits for it).
void AwaitStreamInfer(InferenceService& service, GrpcPoller& poller);

}  // namespace onnxserve::server
