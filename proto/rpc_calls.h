// The two ends of the coordinator's calls (proto/rankscope/v1: every call streams its requests,
// so that the token is checked before any of them is read). Most calls carry one request: these
// helpers make them read like unary calls on both sides.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace rankscope {

// Client: sends `request` as the call's only message and returns the call's status, `*response`
// filled when it is OK. `start` opens the call: e.g.
//   [&](grpc::ClientContext* c, v1::RegisterResponse* r) { return stub->Register(c, r); }.
template <typename Request, typename Response, typename Start>
grpc::Status CallWithOneRequest(Start start, grpc::ClientContext* ctx, const Request& request,
                                Response* response) {
  std::unique_ptr<grpc::ClientWriter<Request>> writer = start(ctx, response);
  // A refused call may end before the request is read; Finish then says why.
  if (writer->Write(request)) writer->WritesDone();
  return writer->Finish();
}

// Server: the call's first request, after the token was checked. INVALID_ARGUMENT when the
// caller sent none (or it was over the message size limit, which Read reports as a failure).
template <typename Reader, typename Request>
grpc::Status ReadRequest(Reader* reader, Request* request, const char* rpc) {
  if (reader->Read(request)) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      std::string("rankscope coordinator: ") + rpc +
                          " without a readable request (none sent, or over the size limit)");
}

}  // namespace rankscope
