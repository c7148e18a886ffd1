// PCI bus ids as NCCL writes them. The topology dump, NVML and NCCL's log lines spell the same
// device three ways ("0000:60:00.0", "00000000:60:00.0", "busId 60000"); these helpers bring
// them to one canonical text so the agent can join a log's communicator with its GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rankscope {

// Returns "dddd:bb:dd.f" in lower case with the domain at least four hex digits, e.g.
// "00000000:60:00.0" -> "0000:60:00.0". A domain wider than four digits is kept whole (NCCL
// writes "fffffff:ff:ff.0" for an NVLink peer a VM cannot see). nullopt if `text` is not of the
// form DOMAIN:BUS:DEVICE.FUNCTION in hex.
std::optional<std::string> NormalizePciBusId(std::string_view text);

// NCCL's integer form of a bus id, as its INIT log lines print it in hex without a prefix:
// "0000:00:06.0" -> 0x60 ("busId 60"), "0000:60:00.0" -> 0x60000 ("busId 60000").
// nullopt if `bus_id` is not a bus id (see NormalizePciBusId).
std::optional<int64_t> NcclBusIdValue(std::string_view bus_id);

// NcclBusIdValue printed the way NCCL's logs do ("60000"); empty if `bus_id` is not a bus id.
std::string NcclShortBusId(std::string_view bus_id);

}  // namespace rankscope
