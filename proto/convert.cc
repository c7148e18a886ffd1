#include "proto/convert.h"

namespace rankscope {

void ToProto(const CollectiveRecord& r, v1::Collective* out) {
  out->set_comm_id(r.comm_id);
  out->set_seq(r.seq);
  out->set_op(static_cast<uint32_t>(r.op));
  out->set_nonblocking(r.nonblocking);
  out->set_root(r.root);
  out->set_comm_size(r.comm_size);
  out->set_comm_rank(r.comm_rank);
  out->set_bytes(r.bytes);
  out->set_enter(r.enter);
  out->set_exit(r.exit);
  out->set_tid(r.tid);
}

void ToProto(const P2PRecord& r, v1::P2P* out) {
  out->set_kind(static_cast<uint32_t>(r.kind));
  out->set_completed(static_cast<uint32_t>(r.completed));
  out->set_peer(r.peer);
  out->set_tag(r.tag);
  out->set_comm_id(r.comm_id);
  out->set_bytes(r.bytes);
  out->set_enter(r.enter);
  out->set_exit(r.exit);
  out->set_tid(r.tid);
}

void ToProto(const RangeRecord& r, v1::Range* out) {
  out->set_domain(r.domain);
  out->set_name(r.name);
  out->set_start(r.start);
  out->set_end(r.end);
  out->set_tid(r.tid);
  out->set_depth(r.depth);
}

void ToProto(const MarkRecord& r, v1::Mark* out) {
  out->set_domain(r.domain);
  out->set_name(r.name);
  out->set_time(r.time);
  out->set_tid(r.tid);
}

void ToProto(const ClockSample& s, v1::ClockSample* out) {
  out->set_t1(s.t1);
  out->set_t2(s.t2);
  out->set_t3(s.t3);
  out->set_t4(s.t4);
}

bool FromProto(const v1::Collective& p, CollectiveRecord* out) {
  bool known = p.op() <= static_cast<uint32_t>(kMaxCollectiveOp);
  out->comm_id = p.comm_id();
  out->seq = p.seq();
  out->op = known ? static_cast<CollectiveOp>(p.op()) : CollectiveOp::kUnknown;
  out->nonblocking = p.nonblocking();
  out->root = p.root();
  out->comm_size = p.comm_size();
  out->comm_rank = p.comm_rank();
  out->bytes = p.bytes();
  out->enter = p.enter();
  out->exit = p.exit();
  out->tid = p.tid();
  return known;
}

bool FromProto(const v1::P2P& p, P2PRecord* out) {
  auto kind_of = [](uint32_t k, bool* ok) {
    if (k >= 1 && k <= 5) return static_cast<P2PKind>(k);
    *ok = false;
    return P2PKind::kSend;
  };
  bool ok = true;
  out->kind = kind_of(p.kind(), &ok);
  out->completed = kind_of(p.completed(), &ok);
  out->peer = p.peer();
  out->tag = p.tag();
  out->comm_id = p.comm_id();
  out->bytes = p.bytes();
  out->enter = p.enter();
  out->exit = p.exit();
  out->tid = p.tid();
  return ok;
}

RangeRecord FromProto(const v1::Range& p) {
  return RangeRecord{p.domain(), p.name(), p.start(), p.end(), p.tid(), p.depth()};
}

MarkRecord FromProto(const v1::Mark& p) {
  return MarkRecord{p.domain(), p.name(), p.time(), p.tid()};
}

ClockSample FromProto(const v1::ClockSample& p) {
  return ClockSample{p.t1(), p.t2(), p.t3(), p.t4()};
}

}  // namespace rankscope
