#include "proto/upload_chunk.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <vector>

namespace rankscope {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// What a value costs inside its message: the payload, a tag and a length prefix (generous).
size_t Framed(size_t payload) { return payload + 16; }

// The serialized size of a field that is not a message (a scalar, a string, or a repeated one).
size_t ScalarFieldSize(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  const bool text = f->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
  if (!f->is_repeated()) {
    return text ? Framed(r->GetStringReference(m, f, nullptr).size()) : 11;
  }
  const int n = r->FieldSize(m, f);
  if (!text) return static_cast<size_t>(n) * 11 + 16;
  size_t total = 16;
  for (int i = 0; i < n; ++i) {
    std::string scratch;
    total += Framed(r->GetRepeatedStringReference(m, f, i, &scratch).size());
  }
  return total;
}

struct Budget {
  size_t limit;
  size_t used = 0;
  size_t dropped = 0;
  bool full = false;
  bool Fits(size_t size) const { return used + size <= limit; }
};

// Moves what fits of `from`'s fields into `to` (of the same type); see the header. `top`: the
// batch itself, whose scalars are the caller's and whose exit status goes last.
void MoveFields(Message* from, Message* to, Budget* b, bool top) {
  const Reflection* r = from->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*from, &fields);  // the fields set, in field-number order
  for (const FieldDescriptor* f : fields) {
    if (b->full) return;
    const bool message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (top && (!message || f->name() == "exit")) continue;
    if (!message) {
      const size_t size = ScalarFieldSize(*from, f);
      if (b->Fits(size)) {
        r->SwapFields(from, to, {f});
        b->used += size;
      } else if (b->used == 0) {
        r->ClearField(from, f);  // larger than any chunk: nothing can carry it
        ++b->dropped;
      } else {
        b->full = true;
      }
      continue;
    }
    if (f->is_repeated()) {
      const int n = r->FieldSize(*from, f);
      int take = 0;
      for (; take < n; ++take) {
        const size_t size = Framed(r->GetRepeatedMessage(*from, f, take).ByteSizeLong());
        if (!b->Fits(size)) break;
        b->used += size;
      }
      if (take == 0 && b->used == 0) {
        // The first element alone is over the budget: nothing can carry it.
        for (int i = 0; i + 1 < n; ++i) r->SwapElements(from, f, i, i + 1);  // to the back
        delete r->ReleaseLast(from, f);
        ++b->dropped;
        continue;
      }
      if (take < n) b->full = true;
      if (take == 0) continue;
      // The first `take` go: the rest are set aside (from the back), the field is moved whole,
      // and the rest put back in order.
      std::vector<Message*> rest;
      rest.reserve(static_cast<size_t>(n - take));
      for (int i = take; i < n; ++i) rest.push_back(r->ReleaseLast(from, f));
      r->SwapFields(from, to, {f});
      for (auto it = rest.rbegin(); it != rest.rend(); ++it) r->AddAllocatedMessage(from, f, *it);
      continue;
    }
    const size_t size = Framed(r->GetMessage(*from, f).ByteSizeLong());
    if (b->Fits(size)) {
      to->GetReflection()->SetAllocatedMessage(to, r->ReleaseMessage(from, f), f);
      b->used += size;
    } else if (b->used > 0) {
      b->full = true;
    } else if (top && f->name() == "nccl") {
      // Alone over the budget, and the coordinator joins its parts (coordinator/ingest.h): this
      // chunk carries what fits of it, and nothing else.
      Message* part = to->GetReflection()->MutableMessage(to, f);
      Message* rest = r->MutableMessage(from, f);
      MoveFields(rest, part, b, false);
      if (rest->ByteSizeLong() == 0) r->ClearField(from, f);
      if (part->ByteSizeLong() == 0) to->GetReflection()->ClearField(to, f);
      b->full = true;
    } else {
      r->ClearField(from, f);  // a part the coordinator takes whole, larger than any chunk
      ++b->dropped;
    }
  }
}

// Whether the batch holds nothing but its own scalars and, if `but_exit`, its exit status.
bool OnlyScalarsLeft(const Message& batch, bool but_exit) {
  std::vector<const FieldDescriptor*> fields;
  batch.GetReflection()->ListFields(batch, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (but_exit && f->name() == "exit") continue;
    return false;
  }
  return true;
}

}  // namespace

ChunkTaken TakeChunk(v1::UploadBatch* queue, v1::UploadBatch* chunk, size_t budget) {
  chunk->Clear();
  Budget b{budget};
  MoveFields(queue, chunk, &b, /*top=*/true);
  if (queue->has_exit() && OnlyScalarsLeft(*queue, /*but_exit=*/true)) {
    chunk->set_allocated_exit(queue->release_exit());
  }
  return ChunkTaken{OnlyScalarsLeft(*queue, /*but_exit=*/false), b.dropped};
}

bool NothingToSend(const v1::UploadBatch& queue) {
  return OnlyScalarsLeft(queue, /*but_exit=*/false);
}

size_t RecordCount(const v1::UploadBatch& batch) {
  const google::protobuf::Descriptor* d = batch.GetDescriptor();
  const google::protobuf::Reflection* r = batch.GetReflection();
  size_t n = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (!f->is_repeated() || f->number() == v1::UploadBatch::kSweepFieldNumber) continue;
    n += static_cast<size_t>(r->FieldSize(batch, f));
  }
  return n;
}

}  // namespace rankscope
