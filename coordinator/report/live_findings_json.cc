#include "coordinator/report/live_findings_json.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

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

namespace {

json CallJson(const LiveOpenCall& c) {
  return {{"collective", c.collective},  {"op", c.op},
          {"comm_id", c.comm_id},        {"seq", c.seq},
          {"comm_size", c.comm_size},    {"peer", c.peer},
          {"since_s", Seconds(c.since)}, {"polling", c.polling}};
}

// An optional member of a JSON object read leniently: what is missing or mistyped reads as `or`.
template <typename T>
T Get(const json& o, const char* key, T or_value) {
  if (!o.is_object() || !o.contains(key)) return or_value;
  const json& v = o[key];
  if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean() ? v.get<bool>() : or_value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string() ? v.get<std::string>() : or_value;
  } else {
    return v.is_number() ? v.get<T>() : or_value;
  }
}

LiveOpenCall CallFromJson(const json& o) {
  LiveOpenCall c;
  c.collective = Get(o, "collective", false);
  c.op = Get<uint32_t>(o, "op", 0);
  c.comm_id = Get<uint64_t>(o, "comm_id", 0);
  c.seq = Get<uint64_t>(o, "seq", 0);
  c.comm_size = Get<int32_t>(o, "comm_size", 0);
  c.peer = Get<int32_t>(o, "peer", -1);
  c.since = Ns(Get(o, "since_s", 0.0));
  c.polling = Get(o, "polling", false);
  return c;
}

}  // namespace

json StallFindingsJson(const std::vector<StallFinding>& findings) {
  json out = json::array();
  for (const StallFinding& f : findings) {
    const HolderState& s = f.state;
    json state = {{"silent", s.silent},          {"silent_for_s", Seconds(s.silent_for)},
                  {"quiet_s", Seconds(s.quiet)}, {"cpu_share", s.cpu_share},
                  {"samples", s.samples},        {"running", s.running},
                  {"stopped", s.stopped},        {"blocked", s.blocked},
                  {"blocked_in", s.blocked_in}};
    if (s.inside) state["inside"] = CallJson(*s.inside);
    json item = {{"kind", StallKindName(f.kind)},
                 {"holder", f.holder},
                 {"waiting", f.waiting},
                 {"call_rank", f.call_rank},
                 {"began_s", Seconds(f.began)},
                 {"found_s", Seconds(f.found)},
                 {"state", state},
                 {"next", f.next},
                 {"text", StallFindingLine(f)}};
    if (f.call) item["call"] = CallJson(*f.call);
    out.push_back(item);
  }
  return out;
}

Result<std::vector<StallFinding>> StallFindingsFromJson(const json& array,
                                                        const std::string& where) {
  using R = Result<std::vector<StallFinding>>;
  if (!array.is_array()) return R::Error(where + ": not a list of live stalls");
  std::vector<StallFinding> out;
  for (const json& item : array) {
    const std::optional<StallKind> kind =
        StallKindFromName(Get<std::string>(item, "kind", std::string()));
    if (!kind || !item.contains("waiting") || !item["waiting"].is_array()) {
      return R::Error(where + ": a live stall without its kind or waiting ranks");
    }
    StallFinding f;
    f.kind = *kind;
    f.holder = Get(item, "holder", -1);
    for (const json& r : item["waiting"]) {
      if (!r.is_number_integer()) return R::Error(where + ": a waiting rank that is no number");
      f.waiting.push_back(r.get<int>());
    }
    f.call_rank = Get(item, "call_rank", -1);
    f.began = Ns(Get(item, "began_s", 0.0));
    f.found = Ns(Get(item, "found_s", 0.0));
    f.next = Get<std::string>(item, "next", std::string());
    if (item.contains("call")) f.call = CallFromJson(item["call"]);
    const json state = item.contains("state") ? item["state"] : json::object();
    HolderState& s = f.state;
    s.silent = Get(state, "silent", false);
    s.silent_for = Ns(Get(state, "silent_for_s", 0.0));
    s.quiet = Ns(Get(state, "quiet_s", 0.0));
    s.cpu_share = Get(state, "cpu_share", -1.0);
    s.samples = Get(state, "samples", 0);
    s.running = Get(state, "running", 0.0);
    s.stopped = Get(state, "stopped", 0.0);
    s.blocked = Get(state, "blocked", 0.0);
    s.blocked_in = Get<std::string>(state, "blocked_in", std::string());
    if (state.contains("inside")) s.inside = CallFromJson(state["inside"]);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace rankscope
