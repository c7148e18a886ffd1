#include "model/topology/pci_bus_id.h"

#include <charconv>
#include <cstdio>

namespace rankscope {
namespace {

struct BusIdParts {
  uint64_t domain = 0;
  uint64_t bus = 0;
  uint64_t device = 0;
  uint64_t function = 0;
};

// Reads hex digits up to `stop` (or the end when stop is '\0'), at most `max_digits` of them.
bool ReadHexField(std::string_view* text, char stop, size_t max_digits, uint64_t* value) {
  size_t end = stop == '\0' ? text->size() : text->find(stop);
  if (end == std::string_view::npos || end == 0 || end > max_digits) return false;
  std::string_view field = text->substr(0, end);
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), *value, 16);
  if (ec != std::errc() || ptr != field.data() + field.size()) return false;
  text->remove_prefix(stop == '\0' ? end : end + 1);
  return true;
}

std::optional<BusIdParts> SplitBusId(std::string_view text) {
  // Surrounding whitespace is common in sysfs reads and hand-written files.
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  BusIdParts parts;
  // A domain holds 16 bits on Linux, but NVML pads it to eight digits and NCCL invents seven
  // f's for hidden peers; accept up to eight.
  if (!ReadHexField(&text, ':', 8, &parts.domain)) return std::nullopt;
  if (!ReadHexField(&text, ':', 2, &parts.bus)) return std::nullopt;
  if (!ReadHexField(&text, '.', 2, &parts.device)) return std::nullopt;
  if (!ReadHexField(&text, '\0', 1, &parts.function)) return std::nullopt;
  return parts;
}

}  // namespace

std::optional<std::string> NormalizePciBusId(std::string_view text) {
  std::optional<BusIdParts> parts = SplitBusId(text);
  if (!parts) return std::nullopt;
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%04llx:%02llx:%02llx.%llx",
                static_cast<unsigned long long>(parts->domain),
                static_cast<unsigned long long>(parts->bus),
                static_cast<unsigned long long>(parts->device),
                static_cast<unsigned long long>(parts->function));
  return std::string(buffer);
}

std::optional<int64_t> NcclBusIdValue(std::string_view bus_id) {
  std::optional<BusIdParts> parts = SplitBusId(bus_id);
  if (!parts) return std::nullopt;
  // NCCL concatenates the hex digits of the canonical form: 4 bits function, 8 device, 8 bus.
  uint64_t value =
      (parts->domain << 20) | (parts->bus << 12) | (parts->device << 4) | parts->function;
  return static_cast<int64_t>(value);
}

std::string NcclShortBusId(std::string_view bus_id) {
  std::optional<int64_t> value = NcclBusIdValue(bus_id);
  if (!value) return "";
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "%llx", static_cast<unsigned long long>(*value));
  return buffer;
}

}  // namespace rankscope
