// An agent's local copy of what it sends the coordinator: its identity, then every upload batch
// as it is made, so that a session survives the loss of its coordinator (kill -9 of `rankscope
// run`): `rankscope report --spools FILE...` rebuilds it from the files of every node.
//
// File: the 8 bytes "RSSPOOL1", then frames of [u32 little-endian length][u8 kind][message];
// kind 1 is the v1::Identity (first), kind 2 a v1::UploadBatch. Bounded by the writer; a frame
// cut short (the agent killed mid-write, a full disk) ends the file, and the reader says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "rankscope/v1/rankscope.pb.h"

namespace rankscope {

inline constexpr size_t kDefaultSpoolBytes = 64u << 20;  // per rank

class SpoolWriter {
 public:
  // Creates `path` (mode 0600, not followed if it is a link) holding `identity`; an error when
  // it cannot, and nothing is spooled.
  static Result<std::unique_ptr<SpoolWriter>> Create(const std::string& path,
                                                     const v1::Identity& identity,
                                                     size_t max_bytes = kDefaultSpoolBytes);
  ~SpoolWriter();
  SpoolWriter(const SpoolWriter&) = delete;
  SpoolWriter& operator=(const SpoolWriter&) = delete;

  // Appends one batch. False, and nothing written, once it would pass the bound or a write
  // failed (full disk): from then on full() is true and every Append is refused.
  bool Append(const v1::UploadBatch& batch);
  bool full() const { return full_; }
  const std::string& path() const { return path_; }

 private:
  SpoolWriter(std::string path, int fd, size_t max_bytes)
      : path_(std::move(path)), fd_(fd), max_bytes_(max_bytes) {}
  bool WriteFrame(uint8_t kind, const std::string& message);

  std::string path_;
  int fd_ = -1;
  size_t max_bytes_ = 0;
  size_t written_ = 0;
  bool full_ = false;
};

struct SpoolContents {
  v1::Identity identity;
  std::vector<v1::UploadBatch> batches;  // in the order written
  std::string problem;                   // a frame cut short or unreadable: where, and why
};

// Reads a spool; an error naming the file when it is not one (no magic, no identity). A frame
// cut short or undecodable ends the batches and is described in `problem`.
Result<SpoolContents> ReadSpool(const std::string& path);

}  // namespace rankscope
