#include "agent/ipc_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace rankscope {
namespace {

int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

struct Collected {
  std::mutex mu;
  std::vector<wire::Batch> batches;
  std::vector<std::string> errors;
};

TEST(IpcServer, DecodesBatchesAndSurvivesGarbage) {
  Collected got;
  IpcServer server(
      [&](wire::Batch&& b) {
        std::lock_guard<std::mutex> l(got.mu);
        got.batches.push_back(std::move(b));
      },
      [&](const std::string& e) {
        std::lock_guard<std::mutex> l(got.mu);
        got.errors.push_back(e);
      });
  ASSERT_TRUE(server.Start("/tmp/rankscope-test-").ok());
  int fd = Connect(server.path());

  std::array<std::byte, wire::kMaxBatchBytes> buf;
  wire::BatchBuilder b(buf.data(), buf.size());
  b.AppendRange("", "step", 1, 2, 3, 0);
  auto batch = b.Finish(77, 0, 5);
  ASSERT_EQ(send(fd, batch.data(), batch.size(), 0), static_cast<ssize_t>(batch.size()));
  const char garbage[] = "GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: curl/7.88\r\n\r\n";
  send(fd, garbage, sizeof(garbage), 0);
  ASSERT_EQ(send(fd, batch.data(), batch.size() - 3, 0), static_cast<ssize_t>(batch.size() - 3));
  ASSERT_EQ(send(fd, batch.data(), batch.size(), 0), static_cast<ssize_t>(batch.size()));
  close(fd);
  server.Stop();

  std::lock_guard<std::mutex> l(got.mu);
  ASSERT_EQ(got.batches.size(), 2u);
  EXPECT_EQ(got.batches[0].pid, 77u);
  EXPECT_EQ(got.batches[0].ranges[0].name, "step");
  ASSERT_EQ(got.errors.size(), 2u);
  EXPECT_NE(got.errors[0].find("bad magic"), std::string::npos);
  EXPECT_NE(got.errors[1].find("truncated"), std::string::npos);
  EXPECT_EQ(server.bad_datagrams(), 2u);
}

TEST(IpcServer, ClosesAConnectionThatOnlySendsGarbage) {
  std::atomic<int> errors{0};
  IpcServer server([](wire::Batch&&) {}, [&](const std::string&) { ++errors; });
  ASSERT_TRUE(server.Start("/tmp/rankscope-test-").ok());
  int fd = Connect(server.path());
  std::vector<char> junk(100, 'z');
  for (int i = 0; i < 100; ++i) {
    if (send(fd, junk.data(), junk.size(), MSG_NOSIGNAL) < 0) break;
  }
  server.Stop();
  close(fd);
  // At most the limit plus the closing message: the agent does not spin on a hostile peer.
  EXPECT_LE(errors.load(), 17);
  EXPECT_GE(errors.load(), 16);
}

TEST(IpcServer, StopRemovesTheSocket) {
  IpcServer server([](wire::Batch&&) {}, [](const std::string&) {});
  ASSERT_TRUE(server.Start("/tmp/rankscope-test-").ok());
  std::string path = server.path();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  server.Stop();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace rankscope
