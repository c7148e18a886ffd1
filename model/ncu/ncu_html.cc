#include "model/ncu/ncu_html.h"

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "model/ncu/ncu_text.h"

namespace rankscope {
namespace {

// The chart's frame: log10 axes, FLOP/byte across, FLOP/s up.
struct Frame {
  double x_lo = -2, x_hi = 4;  // log10 FLOP/byte
  double y_lo = 9, y_hi = 16;  // log10 FLOP/s
  double left = 70, top = 20, width = 640, height = 380;

  double X(double intensity) const {
    return left + (std::log10(intensity) - x_lo) / (x_hi - x_lo) * width;
  }
  double Y(double flops) const {
    return top + height - (std::log10(flops) - y_lo) / (y_hi - y_lo) * height;
  }
};

std::string Num(double v) { return FormatDouble("%.1f", v); }

const char* RoofColor(const std::string& precision) {
  if (precision == "tensor") return "#7b3294";
  if (precision == "fp16") return "#008837";
  if (precision == "fp64") return "#a6611a";
  return "#0571b0";  // fp32
}

// Each distinct roof once (kernels of one GPU share them; the peaks follow each run's clocks,
// so the first kernel's stand for all of a device and precision).
struct Roof {
  std::string device, precision;
  double peak_flops = 0, peak_bps = 0;
};

std::vector<Roof> RoofsOf(const std::vector<KernelAnalysis>& kernels) {
  std::vector<Roof> roofs;
  for (const KernelAnalysis& k : kernels) {
    const MemoryRoof* dram = k.Dram();
    const double bps = dram != nullptr ? dram->peak_bps : 0;
    if (bps <= 0) continue;
    for (const ComputeRoof& c : k.compute) {
      if (c.peak_flops <= 0) continue;
      const bool seen = std::any_of(roofs.begin(), roofs.end(), [&](const Roof& r) {
        return r.device == k.device && r.precision == c.precision;
      });
      if (!seen) roofs.push_back({k.device, c.precision, c.peak_flops, bps});
    }
  }
  return roofs;
}

}  // namespace

std::string ShortKernelName(const std::string& demangled) {
  // The name ends where its template arguments or parameters begin (at depth 0).
  size_t end = demangled.size();
  for (size_t i = 0; i < demangled.size(); ++i) {
    if (demangled[i] == '<' || demangled[i] == '(') {
      end = i;
      break;
    }
  }
  std::string name = demangled.substr(0, end);
  const size_t space = name.find_last_of(' ');
  if (space != std::string::npos) name = name.substr(space + 1);
  const size_t scope = name.rfind("::");
  if (scope != std::string::npos) name = name.substr(scope + 2);
  return name.empty() ? demangled.substr(0, 40) : name;
}

std::string RooflineSvg(const std::vector<KernelAnalysis>& kernels) {
  const std::vector<Roof> roofs = RoofsOf(kernels);
  if (roofs.empty()) return "";
  const Frame f;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    Num(f.left + f.width + 20) + "\" height=\"" + Num(f.top + f.height + 50) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  // Grid and axes: a line per decade.
  for (int d = static_cast<int>(f.x_lo); d <= static_cast<int>(f.x_hi); ++d) {
    const double x = f.X(std::pow(10.0, d));
    svg += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(f.top) + "\" x2=\"" + Num(x) + "\" y2=\"" +
           Num(f.top + f.height) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + Num(x) + "\" y=\"" + Num(f.top + f.height + 14) +
           "\" text-anchor=\"middle\">1e" + std::to_string(d) + "</text>\n";
  }
  for (int d = static_cast<int>(f.y_lo); d <= static_cast<int>(f.y_hi); ++d) {
    const double y = f.Y(std::pow(10.0, d));
    svg += "<line x1=\"" + Num(f.left) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(f.left + f.width) +
           "\" y2=\"" + Num(y) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + Num(f.left - 6) + "\" y=\"" + Num(y + 4) + "\" text-anchor=\"end\">" +
           SiFigure(std::pow(10.0, d), "") + "</text>\n";
  }
  svg += "<rect x=\"" + Num(f.left) + "\" y=\"" + Num(f.top) + "\" width=\"" + Num(f.width) +
         "\" height=\"" + Num(f.height) + "\" fill=\"none\" stroke=\"#999\"/>\n";
  svg += "<text x=\"" + Num(f.left + f.width / 2) + "\" y=\"" + Num(f.top + f.height + 32) +
         "\" text-anchor=\"middle\">arithmetic intensity (FLOP per DRAM byte)</text>\n";
  svg += "<text transform=\"translate(14," + Num(f.top + f.height / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">FLOP/s</text>\n";
  // Roofs: the DRAM slope up to each ridge, then the flat compute roof; the ridge marked.
  // The legend in the plot's lower right, where no kernel can sit (high intensity, few FLOP/s).
  double label_y = f.top + f.height - 8 - 14 * static_cast<double>(roofs.size());
  for (const Roof& r : roofs) {
    const double ridge = r.peak_flops / r.peak_bps;
    const double x0 = std::pow(10.0, f.x_lo);
    const double x1 = std::pow(10.0, f.x_hi);
    const double lo = std::max(x0, std::pow(10.0, f.y_lo) / r.peak_bps);
    const char* color = RoofColor(r.precision);
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" " +
           "points=\"" + Num(f.X(lo)) + "," + Num(f.Y(lo * r.peak_bps)) + " " + Num(f.X(ridge)) +
           "," + Num(f.Y(r.peak_flops)) + " " + Num(f.X(x1)) + "," + Num(f.Y(r.peak_flops)) +
           "\"><title>" + HtmlEscape(r.device + " " + r.precision) + ": peak " +
           SiFigure(r.peak_flops, "FLOP/s") + ", DRAM " + SiFigure(r.peak_bps, "B/s") + ", ridge " +
           Num(ridge) + " FLOP/byte</title></polyline>\n";
    svg += "<circle cx=\"" + Num(f.X(ridge)) + "\" cy=\"" + Num(f.Y(r.peak_flops)) +
           "\" r=\"3\" fill=\"" + color + "\"/>\n";
    svg += "<text x=\"" + Num(f.left + f.width - 8) + "\" y=\"" + Num(label_y) +
           "\" text-anchor=\"end\" fill=\"" + color + "\">" + HtmlEscape(r.device) + " " +
           HtmlEscape(r.precision) + " " + SiFigure(r.peak_flops, "FLOP/s") + "</text>\n";
    label_y += 14;
  }
  svg += "<text x=\"" + Num(f.left + f.width - 8) + "\" y=\"" + Num(label_y) +
         "\" text-anchor=\"end\" fill=\"#555\">DRAM " + SiFigure(roofs.front().peak_bps, "B/s") +
         "</text>\n";
  // Kernels: a dot at (intensity, achieved FLOP/s of the precision that bounds it); a label that
  // would land on an earlier one moves down a line, one near the right edge goes left of its dot.
  std::vector<std::pair<double, double>> labels;
  for (const KernelAnalysis& k : kernels) {
    if (!k.dominant || k.intensity <= 0) continue;
    const double x = f.X(std::clamp(k.intensity, std::pow(10.0, f.x_lo), std::pow(10.0, f.x_hi)));
    const double y =
        f.Y(std::clamp(k.dominant->achieved_flops, std::pow(10.0, f.y_lo), std::pow(10.0, f.y_hi)));
    const std::string name = ShortKernelName(k.kernel);
    svg += "<circle cx=\"" + Num(x) + "\" cy=\"" + Num(y) + "\" r=\"5\" fill=\"" +
           RoofColor(k.dominant->precision) + "\" stroke=\"#000\"><title>" + HtmlEscape(k.kernel) +
           ": " + KernelBoundName(k.bound) + ", " + SiFigure(k.dominant->achieved_flops, "FLOP/s") +
           " " + k.dominant->precision + ", " + Num(k.intensity) + " FLOP/byte, " +
           Num(k.pct_of_roof) + " % of the roof</title></circle>\n";
    const bool right_edge = x > f.left + f.width - 220;
    double text_y = y - 6;
    while (std::any_of(labels.begin(), labels.end(), [&](const std::pair<double, double>& l) {
      return std::abs(l.first - x) < 120 && std::abs(l.second - text_y) < 12;
    })) {
      text_y += 13;
    }
    labels.emplace_back(x, text_y);
    svg += "<text x=\"" + Num(right_edge ? x - 7 : x + 7) + "\" y=\"" + Num(text_y) + "\"" +
           (right_edge ? " text-anchor=\"end\"" : "") + ">" + HtmlEscape(name) + " #" +
           std::to_string(k.id) + "</text>\n";
  }
  return svg + "</svg>\n";
}

std::string StallBarsSvg(const KernelAnalysis& kernel) {
  if (kernel.stalls.empty()) return "";
  double most = 0;
  for (const StallReason& s : kernel.stalls) most = std::max(most, s.cycles_per_issue);
  const double label_w = 140, bar_w = 360, row_h = 16;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    Num(label_w + bar_w + 80) + "\" height=\"" +
                    Num(row_h * static_cast<double>(kernel.stalls.size()) + 4) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  double y = 2;
  for (const StallReason& s : kernel.stalls) {
    const double w = most > 0 ? bar_w * s.cycles_per_issue / most : 0;
    svg += "<text x=\"" + Num(label_w - 6) + "\" y=\"" + Num(y + 11) + "\" text-anchor=\"end\">" +
           HtmlEscape(s.reason) + "</text>\n";
    svg += "<rect x=\"" + Num(label_w) + "\" y=\"" + Num(y + 2) + "\" width=\"" + Num(w) +
           "\" height=\"" + Num(row_h - 4) + "\" fill=\"#d95f02\"><title>" +
           HtmlEscape(s.meaning + (s.fix.empty() ? "" : ". Fix: " + s.fix)) + "</title></rect>\n";
    svg += "<text x=\"" + Num(label_w + w + 4) + "\" y=\"" + Num(y + 11) + "\">" +
           Num(s.cycles_per_issue) + "</text>\n";
    y += row_h;
  }
  return svg + "</svg>\n";
}

std::string KernelsHtml(const std::vector<KernelAnalysis>& kernels, const std::string& title) {
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
      // Nothing from outside and no script: the browser is told so (as report.html does).
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n<title>" +
      HtmlEscape(title) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1000px}"
      "pre{white-space:pre-wrap;background:#f6f6f6;padding:8px}h1{font-size:18px}h2{"
      "font-size:15px}</style>"
      "</head><body>\n<h1>" +
      HtmlEscape(title) + "</h1>\n";
  const std::string chart = RooflineSvg(kernels);
  html += chart.empty()
              ? "<p>No kernel has both FLOPs and DRAM traffic to place on a roofline.</p>\n"
              : "<h2>Roofline (DRAM)</h2>\n" + chart;
  for (const KernelAnalysis& k : kernels) {
    html += "<h2>" + HtmlEscape(ShortKernelName(k.kernel)) + " #" + std::to_string(k.id) + ": " +
            KernelBoundName(k.bound) + "</h2>\n<pre>" + HtmlEscape(DescribeKernels({k})) +
            "</pre>\n";
    const std::string bars = StallBarsSvg(k);
    if (!bars.empty()) html += "<p>Warp stalls, cycles per issued instruction:</p>\n" + bars;
  }
  return html + "</body></html>\n";
}

}  // namespace rankscope
