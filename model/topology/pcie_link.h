// A PCIe link as NCCL's topology dump states it. NCCL fills link_speed/link_width from sysfs
// max_link_speed/max_link_width, the slower of the device and its upstream port: the link's
// capability, not what it trained to (NVML's current generation/width says that). Inside VMs
// sysfs often hides them; NCCL then writes "" or "0", which here is unknown, never zero.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rankscope {

struct PcieLink {
  std::string speed_text;          // as NCCL printed it: "32.0 GT/s PCIe", "16 GT/s", ""
  std::optional<double> gt_per_s;  // transfer rate per lane; nullopt when unknown
  std::optional<int> gen;          // PCIe generation 1..6; nullopt when unknown
  std::optional<int> width_lanes;  // lanes (x1..x32); nullopt when unknown
};

// Parses NCCL's link_speed and link_width attribute values. Old kernels print "16 GT/s", newer
// ones "16.0 GT/s PCIe"; "", "Unknown", "0" and anything unreadable leave the field unknown.
PcieLink ParsePcieLink(std::string_view speed_text, std::string_view width_text);

// The generation whose per-lane rate is `gt_per_s` (2.5 -> 1 ... 64 -> 6); nullopt otherwise.
std::optional<int> PcieGenFromGtPerS(double gt_per_s);

// Short form for tables: "gen5 x16"; unknown parts print as "?" ("gen5 x?", "gen? x?").
std::string FormatPcieLink(const PcieLink& link);

}  // namespace rankscope
