// What requests without the session token cost a coordinator: N clients at once each send a
// message of M MiB, as anyone who can reach the port could, half of them as an Upload and half
// as a Register. The coordinator refuses every one (UNAUTHENTICATED) before reading it (every
// call streams its requests: proto/rankscope/v1); before that, gRPC read each whole message
// before the handler saw its metadata (16 x 60 MiB: 575 MB resident).
// bench/run_hostile_upload.sh reads the coordinator's peak resident memory around it.
//   bench_hostile_upload ADDRESS CLIENTS MIB
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "proto/rpc_calls.h"
#include "rankscope/v1/rankscope.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ADDRESS CLIENTS MIB\n", argv[0]);
    return 2;
  }
  const std::string address = argv[1];
  const int clients = std::atoi(argv[2]);
  const size_t bytes = static_cast<size_t>(std::atoi(argv[3])) << 20;
  rankscope::v1::UploadBatch batch;
  batch.set_agent_id("hostile");
  batch.add_notices()->set_text(std::string(bytes, 'x'));
  rankscope::v1::RegisterRequest reg;
  reg.mutable_identity()->add_program(std::string(bytes, 'x'));
  std::atomic<int> refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      grpc::ChannelArguments args;
      args.SetMaxSendMessageSize(-1);
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      auto stub = rankscope::v1::Coordinator::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      grpc::Status s;
      if (i % 2 == 0) {
        rankscope::v1::UploadAck ack;
        s = rankscope::CallWithOneRequest(
            [&](grpc::ClientContext* c, rankscope::v1::UploadAck* a) { return stub->Upload(c, a); },
            &ctx, batch, &ack);
      } else {
        rankscope::v1::RegisterResponse resp;
        s = rankscope::CallWithOneRequest(
            [&](grpc::ClientContext* c, rankscope::v1::RegisterResponse* r) {
              return stub->Register(c, r);
            },
            &ctx, reg, &resp);
      }
      (s.error_code() == grpc::StatusCode::UNAUTHENTICATED ? refused : other)++;
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("hostile requests: %d clients x %zu MiB: %d refused (unauthenticated), %d other\n",
              clients, bytes >> 20, refused.load(), other.load());
  return 0;
}
