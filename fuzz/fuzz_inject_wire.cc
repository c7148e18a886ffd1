// The inject channel's datagram decoder (core/wire.h): the agent reads datagrams from a socket
// any local process may write to.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto batch =
      rankscope::wire::DecodeBatch(std::span(reinterpret_cast<const std::byte*>(data), size));
  if (batch.ok()) (void)batch.value().record_count();
  return 0;
}
