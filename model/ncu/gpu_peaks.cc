#include "model/ncu/gpu_peaks.h"

namespace rankscope {
namespace {

bool Has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

constexpr double kT = 1e12;

}  // namespace

std::optional<GpuPeaks> DatasheetPeaks(std::string_view device) {
  // NVIDIA's data sheets (H200, H100 SXM / PCIe / NVL, A100 40 and 80 GB, B200 in HGX B200).
  if (Has(device, "H200")) return GpuPeaks{"H200", 34 * kT, 67 * kT, 989 * kT, 4.8 * kT};
  if (Has(device, "H100")) {
    if (Has(device, "NVL")) return GpuPeaks{"H100 NVL", 30 * kT, 60 * kT, 835 * kT, 3.9 * kT};
    if (Has(device, "PCIe")) return GpuPeaks{"H100 PCIe", 26 * kT, 51 * kT, 756 * kT, 2.0 * kT};
    return GpuPeaks{"H100 SXM", 34 * kT, 67 * kT, 989 * kT, 3.35 * kT};
  }
  if (Has(device, "A100")) {
    const bool big = Has(device, "80GB");
    const bool pcie = Has(device, "PCIE") || Has(device, "PCIe");
    const double bps = big ? (pcie ? 1.935 * kT : 2.039 * kT) : 1.555 * kT;
    return GpuPeaks{big ? "A100 80GB" : "A100 40GB", 9.7 * kT, 19.5 * kT, 312 * kT, bps};
  }
  if (Has(device, "B200")) return GpuPeaks{"B200", 40 * kT, 80 * kT, 2250 * kT, 8.0 * kT};
  return std::nullopt;
}

}  // namespace rankscope
