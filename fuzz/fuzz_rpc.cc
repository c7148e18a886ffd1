// The coordinator's decoding of every gRPC request: the first byte picks the request type, the
// rest is its serialized message, as it arrives on the port. An Upload is ingested into a rank
// (coordinator/ingest.h), a Register's identity converted; the session is then assessed and
// aligned as the pipeline does (clock fits from whatever samples arrived).
#include <cstddef>
#include <cstdint>

#include "coordinator/aligner.h"
#include "coordinator/completeness.h"
#include "coordinator/ingest.h"
#include "proto/convert.h"
#include "rankscope/v1/rankscope.pb.h"

namespace v1 = rankscope::v1;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const void* body = data + 1;
  const int length = static_cast<int>(size - 1);
  switch (data[0] % 5) {
    case 0: {
      v1::RegisterRequest req;
      if (req.ParseFromArray(body, length)) (void)rankscope::FromProto(req.identity());
      break;
    }
    case 1: {
      v1::ClockRequest req;
      (void)req.ParseFromArray(body, length);
      break;
    }
    case 2: {
      v1::UploadBatch batch;
      if (!batch.ParseFromArray(body, length)) break;
      rankscope::Session session;
      session.world_size = 2;
      session.ranks.resize(1);
      rankscope::AddBatchToRank(batch, &session.ranks[0]);
      rankscope::AssessCompleteness(&session);
      (void)rankscope::AlignSession(std::move(session));
      break;
    }
    case 3: {
      v1::ControlRequest req;
      (void)req.ParseFromArray(body, length);
      break;
    }
    default: {
      v1::TriggerRequest req;
      (void)req.ParseFromArray(body, length);
      break;
    }
  }
  return 0;
}
