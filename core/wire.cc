#include "core/wire.h"

#include <cstring>
#include <string>

#include "core/utf8.h"

namespace rankscope::wire {
namespace {

// Fixed body sizes of the fixed-layout records.
constexpr size_t kCollectiveBody = 8 + 8 + 1 + 1 + 2 + 4 + 4 + 4 + 8 + 8 + 8 + 4;  // 60
constexpr size_t kP2PBody = 1 + 1 + 2 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + 4 + 8;         // 60
// call u16 | reserved u16 | peer i32 | comm_id u64 | bytes i64 | enter i64 | exit i64 | tid u32
constexpr size_t kMpiCallBody = 2 + 2 + 4 + 8 + 8 + 8 + 8 + 4;  // 44
constexpr size_t kRangeFixed = 8 + 8 + 4 + 4 + 1 + 1;           // 26
constexpr size_t kMarkFixed = 8 + 4 + 1 + 1;                    // 14
// kind u8 | copy_kind u8 | sync_kind u8 | reserved u8 | device u32 | context u32 | stream u32 |
// correlation_id u32 | tid u32 | start i64 | end i64 | bytes i64 | grid 3 x i32 | block 3 x i32 |
// name_len u16 | name
constexpr size_t kGpuFixed = 4 + 4 * 5 + 8 * 3 + 4 * 6 + 2;  // 74

class Writer {
 public:
  explicit Writer(std::byte* p) : p_(p) {}
  template <typename T>
  void Put(T v) {
    std::memcpy(p_, &v, sizeof(T));
    p_ += sizeof(T);
  }
  void PutBytes(std::string_view s) {
    if (s.empty()) return;  // an empty view may hold a null data(): memcpy(.., nullptr, 0) is UB
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }

 private:
  std::byte* p_;
};

class Reader {
 public:
  Reader(const std::byte* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string GetString(size_t len) {
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }
  size_t remaining() const { return n_ - pos_; }

 private:
  const std::byte* p_;
  size_t n_;
  size_t pos_ = 0;
};

// At most kMaxNameBytes, never in the middle of a character (the coordinator would show it as
// U+FFFD).
std::string_view Clip(std::string_view s) { return s.substr(0, Utf8Cut(s, kMaxNameBytes)); }

std::string At(size_t offset, const std::string& what) {
  return "inject batch: " + what + " at byte " + std::to_string(offset);
}

}  // namespace

BatchBuilder::BatchBuilder(std::byte* buffer, size_t capacity)
    : buffer_(buffer), capacity_(capacity < kMaxBatchBytes ? capacity : kMaxBatchBytes) {}

void BatchBuilder::Reset() {
  used_ = kHeaderSize;
  record_count_ = 0;
}

std::byte* BatchBuilder::Reserve(RecordType type, size_t body_len) {
  if (body_len > UINT16_MAX || used_ + kRecordHeaderSize + body_len > capacity_) return nullptr;
  Writer w(buffer_ + used_);
  w.Put<uint8_t>(static_cast<uint8_t>(type));
  w.Put<uint8_t>(0);
  w.Put<uint16_t>(static_cast<uint16_t>(body_len));
  std::byte* body = buffer_ + used_ + kRecordHeaderSize;
  used_ += kRecordHeaderSize + body_len;
  ++record_count_;
  return body;
}

bool BatchBuilder::AppendCollective(const CollectiveRecord& r) {
  std::byte* body = Reserve(RecordType::kCollective, kCollectiveBody);
  if (body == nullptr) return false;
  Writer w(body);
  w.Put<uint64_t>(r.comm_id);
  w.Put<uint64_t>(r.seq);
  w.Put<uint8_t>(static_cast<uint8_t>(r.op));
  w.Put<uint8_t>(r.nonblocking ? 1 : 0);
  w.Put<uint16_t>(0);
  w.Put<int32_t>(r.root);
  w.Put<int32_t>(r.comm_size);
  w.Put<int32_t>(r.comm_rank);
  w.Put<int64_t>(r.bytes);
  w.Put<int64_t>(r.enter);
  w.Put<int64_t>(r.exit);
  w.Put<uint32_t>(r.tid);
  return true;
}

bool BatchBuilder::AppendP2P(const P2PRecord& r) {
  std::byte* body = Reserve(RecordType::kP2P, kP2PBody);
  if (body == nullptr) return false;
  Writer w(body);
  w.Put<uint8_t>(static_cast<uint8_t>(r.kind));
  w.Put<uint8_t>(static_cast<uint8_t>(r.completed));
  w.Put<uint16_t>(0);
  w.Put<int32_t>(r.peer);
  w.Put<int32_t>(r.tag);
  w.Put<uint64_t>(r.comm_id);
  w.Put<int64_t>(r.bytes);
  w.Put<int64_t>(r.enter);
  w.Put<int64_t>(r.exit);
  w.Put<uint32_t>(r.tid);
  w.Put<int32_t>(r.world_peer);
  w.Put<int64_t>(r.spin_start);
  return true;
}

bool BatchBuilder::AppendMpiCall(const MpiCallRecord& r) {
  std::byte* body = Reserve(RecordType::kMpiCall, kMpiCallBody);
  if (body == nullptr) return false;
  Writer w(body);
  w.Put<uint16_t>(static_cast<uint16_t>(r.call));
  w.Put<uint16_t>(0);
  w.Put<int32_t>(r.peer);
  w.Put<uint64_t>(r.comm_id);
  w.Put<int64_t>(r.bytes);
  w.Put<int64_t>(r.enter);
  w.Put<int64_t>(r.exit);
  w.Put<uint32_t>(r.tid);
  return true;
}

bool BatchBuilder::AppendRange(std::string_view domain, std::string_view name, TimeNs start,
                               TimeNs end, uint32_t tid, uint32_t depth) {
  domain = Clip(domain);
  name = Clip(name);
  std::byte* body = Reserve(RecordType::kRange, kRangeFixed + domain.size() + name.size());
  if (body == nullptr) return false;
  Writer w(body);
  w.Put<int64_t>(start);
  w.Put<int64_t>(end);
  w.Put<uint32_t>(tid);
  w.Put<uint32_t>(depth);
  w.Put<uint8_t>(static_cast<uint8_t>(domain.size()));
  w.Put<uint8_t>(static_cast<uint8_t>(name.size()));
  w.PutBytes(domain);
  w.PutBytes(name);
  return true;
}

bool BatchBuilder::AppendMark(std::string_view domain, std::string_view name, TimeNs time,
                              uint32_t tid) {
  domain = Clip(domain);
  name = Clip(name);
  std::byte* body = Reserve(RecordType::kMark, kMarkFixed + domain.size() + name.size());
  if (body == nullptr) return false;
  Writer w(body);
  w.Put<int64_t>(time);
  w.Put<uint32_t>(tid);
  w.Put<uint8_t>(static_cast<uint8_t>(domain.size()));
  w.Put<uint8_t>(static_cast<uint8_t>(name.size()));
  w.PutBytes(domain);
  w.PutBytes(name);
  return true;
}

bool BatchBuilder::AppendNotice(std::string_view text) {
  text = text.substr(0, 1024);
  std::byte* body = Reserve(RecordType::kNotice, text.size());
  if (body == nullptr) return false;
  Writer(body).PutBytes(text);
  return true;
}

bool BatchBuilder::AppendGpuActivity(const GpuActivityRecord& r) {
  std::string_view name = std::string_view(r.name).substr(0, kMaxGpuNameBytes);
  std::byte* body = Reserve(RecordType::kGpuActivity, kGpuFixed + name.size());
  if (body == nullptr) return false;
  Writer w(body);
  w.Put<uint8_t>(static_cast<uint8_t>(r.kind));
  w.Put<uint8_t>(r.copy_kind);
  w.Put<uint8_t>(r.sync_kind);
  w.Put<uint8_t>(0);
  w.Put<uint32_t>(r.device);
  w.Put<uint32_t>(r.context);
  w.Put<uint32_t>(r.stream);
  w.Put<uint32_t>(r.correlation_id);
  w.Put<uint32_t>(r.tid);
  w.Put<int64_t>(r.start);
  w.Put<int64_t>(r.end);
  w.Put<int64_t>(r.bytes);
  for (int32_t g : r.grid) w.Put<int32_t>(g);
  for (int32_t b : r.block) w.Put<int32_t>(b);
  w.Put<uint16_t>(static_cast<uint16_t>(name.size()));
  w.PutBytes(name);
  return true;
}

std::span<const std::byte> BatchBuilder::Finish(uint32_t pid, uint32_t dropped, TimeNs flush_time) {
  Writer w(buffer_);
  w.Put<uint32_t>(kMagic);
  w.Put<uint16_t>(kVersion);
  w.Put<uint16_t>(static_cast<uint16_t>(kHeaderSize));
  w.Put<uint32_t>(pid);
  w.Put<uint32_t>(record_count_);
  w.Put<uint32_t>(static_cast<uint32_t>(used_ - kHeaderSize));
  w.Put<uint32_t>(dropped);
  w.Put<int64_t>(flush_time);
  return {buffer_, used_};
}

namespace {

// One record's body (len bytes at `offset`, for messages), appended to the batch.
Status DecodeCollective(Reader& r, size_t len, size_t offset, Batch* batch) {
  if (len != kCollectiveBody) return Status::Error(At(offset, "bad collective size"));
  CollectiveRecord c;
  c.comm_id = r.Get<uint64_t>();
  c.seq = r.Get<uint64_t>();
  uint8_t op = r.Get<uint8_t>();
  if (op > kMaxCollectiveOp) return Status::Error(At(offset, "unknown collective op"));
  c.op = static_cast<CollectiveOp>(op);
  c.nonblocking = r.Get<uint8_t>() != 0;
  r.Get<uint16_t>();
  c.root = r.Get<int32_t>();
  c.comm_size = r.Get<int32_t>();
  c.comm_rank = r.Get<int32_t>();
  c.bytes = r.Get<int64_t>();
  c.enter = r.Get<int64_t>();
  c.exit = r.Get<int64_t>();
  c.tid = r.Get<uint32_t>();
  batch->collectives.push_back(c);
  return Status::Ok();
}

Status DecodeP2P(Reader& r, size_t len, size_t offset, Batch* batch) {
  if (len != kP2PBody) return Status::Error(At(offset, "bad p2p record size"));
  P2PRecord p;
  uint8_t kind = r.Get<uint8_t>();
  uint8_t completed = r.Get<uint8_t>();
  if (kind < 1 || kind > kMaxP2PKind || completed < 1 || completed > kMaxP2PKind) {
    return Status::Error(At(offset, "unknown p2p kind"));
  }
  p.kind = static_cast<P2PKind>(kind);
  p.completed = static_cast<P2PKind>(completed);
  r.Get<uint16_t>();
  p.peer = r.Get<int32_t>();
  p.tag = r.Get<int32_t>();
  p.comm_id = r.Get<uint64_t>();
  p.bytes = r.Get<int64_t>();
  p.enter = r.Get<int64_t>();
  p.exit = r.Get<int64_t>();
  p.tid = r.Get<uint32_t>();
  p.world_peer = r.Get<int32_t>();
  p.spin_start = r.Get<int64_t>();
  batch->p2p.push_back(p);
  return Status::Ok();
}

Status DecodeMpiCall(Reader& r, size_t len, size_t offset, Batch* batch) {
  if (len != kMpiCallBody) return Status::Error(At(offset, "bad mpi call size"));
  MpiCallRecord m;
  uint16_t call = r.Get<uint16_t>();
  if (call > kMaxMpiCall) return Status::Error(At(offset, "unknown mpi call"));
  m.call = static_cast<MpiCall>(call);
  r.Get<uint16_t>();
  m.peer = r.Get<int32_t>();
  m.comm_id = r.Get<uint64_t>();
  m.bytes = r.Get<int64_t>();
  m.enter = r.Get<int64_t>();
  m.exit = r.Get<int64_t>();
  m.tid = r.Get<uint32_t>();
  batch->mpi_calls.push_back(m);
  return Status::Ok();
}

Status DecodeRange(Reader& r, size_t len, size_t offset, Batch* batch) {
  if (len < kRangeFixed) return Status::Error(At(offset, "short range record"));
  RangeRecord rr;
  rr.start = r.Get<int64_t>();
  rr.end = r.Get<int64_t>();
  rr.tid = r.Get<uint32_t>();
  rr.depth = r.Get<uint32_t>();
  size_t dlen = r.Get<uint8_t>();
  size_t nlen = r.Get<uint8_t>();
  if (kRangeFixed + dlen + nlen != len) {
    return Status::Error(At(offset, "range name lengths do not match record size"));
  }
  rr.domain = r.GetString(dlen);
  rr.name = r.GetString(nlen);
  batch->ranges.push_back(std::move(rr));
  return Status::Ok();
}

Status DecodeMark(Reader& r, size_t len, size_t offset, Batch* batch) {
  if (len < kMarkFixed) return Status::Error(At(offset, "short mark record"));
  MarkRecord m;
  m.time = r.Get<int64_t>();
  m.tid = r.Get<uint32_t>();
  size_t dlen = r.Get<uint8_t>();
  size_t nlen = r.Get<uint8_t>();
  if (kMarkFixed + dlen + nlen != len) {
    return Status::Error(At(offset, "mark name lengths do not match record size"));
  }
  m.domain = r.GetString(dlen);
  m.name = r.GetString(nlen);
  batch->marks.push_back(std::move(m));
  return Status::Ok();
}

Status DecodeGpuActivity(Reader& r, size_t len, size_t offset, Batch* batch) {
  if (len < kGpuFixed) return Status::Error(At(offset, "short gpu activity record"));
  GpuActivityRecord g;
  uint8_t kind = r.Get<uint8_t>();
  if (kind < 1 || kind > kMaxGpuActivityKind) {
    return Status::Error(At(offset, "unknown gpu activity kind"));
  }
  g.kind = static_cast<GpuActivityKind>(kind);
  g.copy_kind = r.Get<uint8_t>();
  g.sync_kind = r.Get<uint8_t>();
  r.Get<uint8_t>();
  g.device = r.Get<uint32_t>();
  g.context = r.Get<uint32_t>();
  g.stream = r.Get<uint32_t>();
  g.correlation_id = r.Get<uint32_t>();
  g.tid = r.Get<uint32_t>();
  g.start = r.Get<int64_t>();
  g.end = r.Get<int64_t>();
  g.bytes = r.Get<int64_t>();
  for (int32_t& v : g.grid) v = r.Get<int32_t>();
  for (int32_t& v : g.block) v = r.Get<int32_t>();
  size_t nlen = r.Get<uint16_t>();
  if (kGpuFixed + nlen != len) {
    return Status::Error(At(offset, "gpu activity name length does not match record size"));
  }
  g.name = r.GetString(nlen);
  batch->gpu.push_back(std::move(g));
  return Status::Ok();
}

Status DecodeRecord(RecordType type, Reader& r, size_t len, size_t offset, Batch* batch) {
  switch (type) {
    case RecordType::kCollective:
      return DecodeCollective(r, len, offset, batch);
    case RecordType::kP2P:
      return DecodeP2P(r, len, offset, batch);
    case RecordType::kMpiCall:
      return DecodeMpiCall(r, len, offset, batch);
    case RecordType::kRange:
      return DecodeRange(r, len, offset, batch);
    case RecordType::kMark:
      return DecodeMark(r, len, offset, batch);
    case RecordType::kNotice:
      batch->notices.push_back(r.GetString(len));
      return Status::Ok();
    case RecordType::kGpuActivity:
      return DecodeGpuActivity(r, len, offset, batch);
  }
  return Status::Error(At(offset, "unknown record type " + std::to_string(static_cast<int>(type))));
}

// The header: magic, version, sizes; fills the batch's pid, dropped count and flush time, and
// returns the record count.
Result<uint32_t> DecodeHeader(std::span<const std::byte> data, Batch* batch) {
  if (data.size() < kHeaderSize) {
    return Result<uint32_t>::Error("inject batch: " + std::to_string(data.size()) +
                                   " bytes is shorter than the " + std::to_string(kHeaderSize) +
                                   "-byte header (truncated message)");
  }
  Reader h(data.data(), kHeaderSize);
  if (uint32_t magic = h.Get<uint32_t>(); magic != kMagic) {
    return Result<uint32_t>::Error("inject batch: bad magic (not a rankscope inject message)");
  }
  if (uint16_t version = h.Get<uint16_t>(); version != kVersion) {
    return Result<uint32_t>::Error("inject batch: wire version " + std::to_string(version) +
                                   ", this agent speaks " + std::to_string(kVersion) +
                                   " (inject library and agent come from different builds)");
  }
  if (h.Get<uint16_t>() != kHeaderSize) return Result<uint32_t>::Error(At(6, "bad header size"));
  batch->pid = h.Get<uint32_t>();
  uint32_t count = h.Get<uint32_t>();
  uint32_t payload = h.Get<uint32_t>();
  batch->dropped = h.Get<uint32_t>();
  batch->flush_time = h.Get<int64_t>();
  if (payload != data.size() - kHeaderSize) {
    return Result<uint32_t>::Error("inject batch: header says " + std::to_string(payload) +
                                   " payload bytes, datagram has " +
                                   std::to_string(data.size() - kHeaderSize) + " (truncated?)");
  }
  return count;
}

}  // namespace

Result<Batch> DecodeBatch(std::span<const std::byte> data) {
  Batch batch;
  Result<uint32_t> header = DecodeHeader(data, &batch);
  if (!header.ok()) return header.status();
  const uint32_t count = header.value();
  size_t offset = kHeaderSize;
  for (uint32_t i = 0; i < count; ++i) {
    if (data.size() - offset < kRecordHeaderSize) {
      return Result<Batch>::Error(
          At(offset, "record " + std::to_string(i) + " of " + std::to_string(count) + " missing"));
    }
    Reader rh(data.data() + offset, kRecordHeaderSize);
    auto type = static_cast<RecordType>(rh.Get<uint8_t>());
    rh.Get<uint8_t>();
    size_t len = rh.Get<uint16_t>();
    size_t body_offset = offset + kRecordHeaderSize;
    if (data.size() - body_offset < len) {
      return Result<Batch>::Error(
          At(offset, "record body of " + std::to_string(len) + " bytes overruns the datagram"));
    }
    Reader r(data.data() + body_offset, len);
    if (Status s = DecodeRecord(type, r, len, offset, &batch); !s.ok()) return s;
    offset = body_offset + len;
  }
  if (offset != data.size()) {
    return Result<Batch>::Error(
        At(offset, "trailing bytes after " + std::to_string(count) + " records"));
  }
  return batch;
}

}  // namespace rankscope::wire
