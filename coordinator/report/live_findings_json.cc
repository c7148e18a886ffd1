#include "coordinator/report/live_findings_json.h"

#include <cmath>
#include <cstdint>

namespace rankscope {

using nlohmann::json;

namespace {

double Seconds(DurationNs d) { return static_cast<double>(d) / 1e9; }
DurationNs Ns(double seconds) { return static_cast<DurationNs>(std::llround(seconds * 1e9)); }

}  // namespace

json LiveFindingsJson(const std::vector<LiveFinding>& findings) {
  json out = json::array();
  for (const LiveFinding& f : findings) {
    out.push_back({{"rank", f.rank},
                   {"cause", LiveCauseName(f.cause)},
                   {"began_s", Seconds(f.began)},
                   {"found_s", Seconds(f.found)},
                   {"window_s", Seconds(f.window)},
                   {"own_share", f.own_share},
                   {"others_own_share", f.others_own_share},
                   {"others_waiting", f.others_waiting},
                   {"throttled_share", f.throttled_share},
                   {"run_delay_share", f.run_delay_share},
                   {"others_run_delay_share", f.others_run_delay_share},
                   {"off_cpu_share", f.off_cpu_share},
                   {"text", LiveFindingLine(f)}});
  }
  return out;
}

Result<std::vector<LiveFinding>> LiveFindingsFromJson(const json& array, const std::string& where) {
  using R = Result<std::vector<LiveFinding>>;
  if (!array.is_array()) return R::Error(where + ": not a list of live findings");
  std::vector<LiveFinding> out;
  for (const json& item : array) {
    if (!item.is_object() || !item.contains("rank") || !item["rank"].is_number_integer() ||
        item["rank"].get<int64_t>() < 0 || item["rank"].get<int64_t>() > INT32_MAX ||
        !item.contains("cause") || !item["cause"].is_string()) {
      return R::Error(where + ": a live finding without its rank or cause");
    }
    std::optional<LiveCause> cause = LiveCauseFromName(item["cause"].get<std::string>());
    if (!cause) {
      return R::Error(where + ": unknown live finding cause '" + item["cause"].get<std::string>() +
                      "'");
    }
    LiveFinding f;
    f.rank = item["rank"].get<int>();
    f.cause = *cause;
    auto number = [&](const char* key) {
      return item.contains(key) && item[key].is_number() ? item[key].get<double>() : 0.0;
    };
    f.began = Ns(number("began_s"));
    f.found = Ns(number("found_s"));
    f.window = Ns(number("window_s"));
    f.own_share = number("own_share");
    f.others_own_share = number("others_own_share");
    f.others_waiting = number("others_waiting");
    f.throttled_share = number("throttled_share");
    f.run_delay_share = number("run_delay_share");
    f.others_run_delay_share = number("others_run_delay_share");
    f.off_cpu_share = number("off_cpu_share");
    out.push_back(f);
  }
  return out;
}

}  // namespace rankscope
