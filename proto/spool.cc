#include "proto/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

namespace rankscope {
namespace {

constexpr char kMagic[8] = {'R', 'S', 'S', 'P', 'O', 'O', 'L', '1'};
constexpr uint8_t kIdentityFrame = 1;
constexpr uint8_t kBatchFrame = 2;
constexpr size_t kFrameHeader = 5;  // u32 length + u8 kind

}  // namespace

Result<std::unique_ptr<SpoolWriter>> SpoolWriter::Create(const std::string& path,
                                                         const v1::Identity& identity,
                                                         size_t max_bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Result<std::unique_ptr<SpoolWriter>>::Error("cannot create the spool " + path + ": " +
                                                       std::strerror(errno));
  }
  std::unique_ptr<SpoolWriter> w(new SpoolWriter(path, fd, max_bytes));
  std::string id;
  identity.SerializeToString(&id);
  if (write(fd, kMagic, sizeof(kMagic)) != static_cast<ssize_t>(sizeof(kMagic)) ||
      !w->WriteFrame(kIdentityFrame, id)) {
    return Result<std::unique_ptr<SpoolWriter>>::Error("cannot write the spool " + path + ": " +
                                                       std::strerror(errno));
  }
  w->written_ += sizeof(kMagic);
  return w;
}

SpoolWriter::~SpoolWriter() {
  if (fd_ >= 0) close(fd_);
}

bool SpoolWriter::WriteFrame(uint8_t kind, const std::string& message) {
  std::string frame(kFrameHeader, '\0');
  const auto length = static_cast<uint32_t>(message.size());
  for (int i = 0; i < 4; ++i) frame[static_cast<size_t>(i)] = static_cast<char>(length >> (8 * i));
  frame[4] = static_cast<char>(kind);
  frame += message;
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  written_ += frame.size();
  return true;
}

bool SpoolWriter::Append(const v1::UploadBatch& batch) {
  if (full_) return false;
  std::string message;
  batch.SerializeToString(&message);
  if (written_ + kFrameHeader + message.size() > max_bytes_ || !WriteFrame(kBatchFrame, message)) {
    full_ = true;
    return false;
  }
  return true;
}

Result<SpoolContents> ReadSpool(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Result<SpoolContents>::Error("cannot read the spool " + path + ": " +
                                        std::strerror(errno));
  }
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof(kMagic) ||
      data.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0) {
    return Result<SpoolContents>::Error(path + " is not a rankscope spool (no RSSPOOL1 header)");
  }
  SpoolContents out;
  bool have_identity = false;
  size_t at = sizeof(kMagic);
  while (at < data.size()) {
    if (data.size() - at < kFrameHeader) {
      out.problem = "a frame cut short at byte " + std::to_string(at);
      break;
    }
    uint32_t length = 0;
    for (int i = 0; i < 4; ++i) {
      length |= static_cast<uint32_t>(static_cast<uint8_t>(data[at + static_cast<size_t>(i)]))
                << (8 * i);
    }
    const auto kind = static_cast<uint8_t>(data[at + 4]);
    if (data.size() - at - kFrameHeader < length) {
      out.problem = "a frame cut short at byte " + std::to_string(at);
      break;
    }
    const char* body = data.data() + at + kFrameHeader;
    bool ok = false;
    if (kind == kIdentityFrame && !have_identity) {
      ok = out.identity.ParseFromArray(body, static_cast<int>(length));
      have_identity = ok;
    } else if (kind == kBatchFrame && have_identity) {
      ok = out.batches.emplace_back().ParseFromArray(body, static_cast<int>(length));
      if (!ok) out.batches.pop_back();
    }
    if (!ok) {
      out.problem =
          "an unreadable frame (kind " + std::to_string(kind) + ") at byte " + std::to_string(at);
      break;
    }
    at += kFrameHeader + length;
  }
  if (!have_identity) {
    return Result<SpoolContents>::Error(path + ": no agent identity" +
                                        (out.problem.empty() ? "" : " (" + out.problem + ")"));
  }
  return out;
}

}  // namespace rankscope
