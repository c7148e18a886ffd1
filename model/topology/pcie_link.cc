#include "model/topology/pcie_link.h"

#include <charconv>
#include <cmath>

namespace rankscope {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<double> ParseGtPerS(std::string_view text) {
  text = Trim(text);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value <= 0) return std::nullopt;
  std::string_view rest = Trim(std::string_view(ptr, text.data() + text.size() - ptr));
  // The unit is what tells a speed from a stray number.
  if (rest.substr(0, 4) != "GT/s") return std::nullopt;
  return value;
}

std::optional<int> ParseWidth(std::string_view text) {
  text = Trim(text);
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // NCCL writes 0 when it could not read the width; no link has zero lanes.
  if (ec != std::errc() || ptr != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int> PcieGenFromGtPerS(double gt_per_s) {
  static constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int i = 0; i < 6; ++i) {
    if (std::fabs(gt_per_s - kRates[i]) < 0.05) return i + 1;
  }
  return std::nullopt;
}

PcieLink ParsePcieLink(std::string_view speed_text, std::string_view width_text) {
  PcieLink link;
  link.speed_text = std::string(Trim(speed_text));
  link.gt_per_s = ParseGtPerS(speed_text);
  if (link.gt_per_s) link.gen = PcieGenFromGtPerS(*link.gt_per_s);
  link.width_lanes = ParseWidth(width_text);
  return link;
}

std::string FormatPcieLink(const PcieLink& link) {
  std::string text = "gen";
  text += link.gen ? std::to_string(*link.gen) : "?";
  text += " x";
  text += link.width_lanes ? std::to_string(*link.width_lanes) : "?";
  return text;
}

}  // namespace rankscope
