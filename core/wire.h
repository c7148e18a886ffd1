// The inject -> agent wire format: one batch per datagram on a local SOCK_SEQPACKET socket.
//
//   batch  := header record*
//   header := magic u32 | version u16 | header_size u16 | pid u32 | record_count u32 |
//             payload_bytes u32 | dropped u32 | flush_time i64          (32 bytes)
//   record := type u8 | reserved u8 | body_len u16 | body[body_len]
//
// Integers are little-endian (producer and consumer share a host). The encoder writes into a
// caller-owned fixed buffer and never allocates, so the inject library can use it on hot paths.
// The decoder trusts nothing: any bad length, type or count is an error naming the offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.h"
#include "core/status.h"

namespace rankscope::wire {

inline constexpr uint32_t kMagic = 0x31435352;  // "RSC1"
// 2: P2P records carry world_peer; the kMpiCall record type. 3: P2P records carry spin_start.
inline constexpr uint16_t kVersion = 3;
inline constexpr size_t kHeaderSize = 32;
inline constexpr size_t kRecordHeaderSize = 4;
// Largest batch a producer sends; fits the default AF_UNIX socket buffer.
inline constexpr size_t kMaxBatchBytes = 64 * 1024;
// Longest domain or range name kept; longer names are truncated.
inline constexpr size_t kMaxNameBytes = 255;
// Longest GPU activity name kept. Mangled C++ kernel names (templates, NCCL's device kernels)
// often exceed kMaxNameBytes; 1024 keeps nearly all of them whole and a batch still holds
// dozens of records. Longer names are truncated.
inline constexpr size_t kMaxGpuNameBytes = 1024;

enum class RecordType : uint8_t {
  kCollective = 1,
  kP2P = 2,
  kRange = 3,
  kMark = 4,
  kNotice = 5,  // a one-line message from the inject library (e.g. "disabled: ...")
  kGpuActivity = 6,
  kMpiCall = 7,  // an MPI call the analyses do not interpret (MpiCallRecord)
};

// Builds one batch in a fixed buffer. Not thread-safe; one builder per thread.
class BatchBuilder {
 public:
  // `buffer` must hold at least kHeaderSize bytes and stay live while the builder is used.
  BatchBuilder(std::byte* buffer, size_t capacity);

  BatchBuilder(const BatchBuilder&) = delete;
  BatchBuilder& operator=(const BatchBuilder&) = delete;

  // Each Append returns false, leaving the batch unchanged, if the record does not fit.
  bool AppendCollective(const CollectiveRecord& r);
  bool AppendP2P(const P2PRecord& r);
  bool AppendRange(std::string_view domain, std::string_view name, TimeNs start, TimeNs end,
                   uint32_t tid, uint32_t depth);
  bool AppendMark(std::string_view domain, std::string_view name, TimeNs time, uint32_t tid);
  bool AppendNotice(std::string_view text);
  // Writes r.name truncated to kMaxGpuNameBytes.
  bool AppendGpuActivity(const GpuActivityRecord& r);
  bool AppendMpiCall(const MpiCallRecord& r);

  // Writes the header and returns the finished batch. The builder stays usable after Reset().
  std::span<const std::byte> Finish(uint32_t pid, uint32_t dropped, TimeNs flush_time);
  void Reset();

  uint32_t record_count() const { return record_count_; }
  bool empty() const { return record_count_ == 0; }
  size_t size() const { return used_; }

 private:
  std::byte* Reserve(RecordType type, size_t body_len);

  std::byte* buffer_;
  size_t capacity_;
  size_t used_ = kHeaderSize;
  uint32_t record_count_ = 0;
};

// A decoded batch with owned strings.
struct Batch {
  uint32_t pid = 0;
  uint32_t dropped = 0;
  TimeNs flush_time = 0;
  std::vector<CollectiveRecord> collectives;
  std::vector<P2PRecord> p2p;
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
  std::vector<std::string> notices;
  std::vector<GpuActivityRecord> gpu;
  std::vector<MpiCallRecord> mpi_calls;

  // Every record the batch carries, of every kind (notices included): the one count the agent's
  // buffer bound and drop accounting use.
  size_t record_count() const {
    return collectives.size() + p2p.size() + ranges.size() + marks.size() + notices.size() +
           gpu.size() + mpi_calls.size();
  }
};

// Decodes one datagram. Unknown record types are an error (a newer producer must bump the
// version); the message names the byte offset and the problem.
Result<Batch> DecodeBatch(std::span<const std::byte> data);

}  // namespace rankscope::wire
