// What unauthenticated uploads cost a coordinator: N clients at once each send an Upload of M MiB
// without the session token, as anyone who can reach the port could. The coordinator refuses
// every one (UNAUTHENTICATED), but gRPC reads a whole message before the handler sees its
// metadata; bench/run_hostile_upload.sh reads the coordinator's peak resident memory around it.
//   bench_hostile_upload ADDRESS CLIENTS MIB
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

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
  std::atomic<int> refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&] {
      grpc::ChannelArguments args;
      args.SetMaxSendMessageSize(-1);
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      auto stub = rankscope::v1::Coordinator::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      rankscope::v1::UploadAck ack;
      const grpc::Status s = stub->Upload(&ctx, batch, &ack);
      (s.error_code() == grpc::StatusCode::UNAUTHENTICATED ? refused : other)++;
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("hostile uploads: %d clients x %zu MiB: %d refused (unauthenticated), %d other\n",
              clients, bytes >> 20, refused.load(), other.load());
  return 0;
}
