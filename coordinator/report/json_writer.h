// JsonWriter: appends JSON text to a string as it goes, for outputs too large to build as a
// document tree first (trace.json holds every slice of every rank: millions of events on a GPU
// job, where a tree costs ten times the time and memory of the text).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/time.h"

namespace rankscope {

// The caller keeps the nesting right (every Begin has its End, a Key before each member of an
// object); the writer inserts the commas. Strings that are not valid UTF-8 are written with
// U+FFFD in place of each bad byte, so the output always parses.
class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  // Spilling: whenever an object or array closes with `threshold` bytes or more in the string,
  // they go to `sink` and the string is emptied, so a long output (trace.json) is never held
  // whole. After the sink fails once nothing more is sent (SinkOk() says so) and the string
  // is still emptied. Call Spill() at the end for what is left.
  void SpillTo(std::function<bool(std::string_view)> sink, size_t threshold) {
    sink_ = std::move(sink);
    threshold_ = threshold;
  }
  // Sends what the string holds to the sink; false if the sink failed, now or before.
  bool Spill();
  bool SinkOk() const { return !sink_failed_; }

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Double(double value);  // shortest text that reads back the same; NaN/inf: null
  // Nanoseconds as microseconds with three decimals, exact (no rounding through a double):
  // Chrome's trace format counts in microseconds.
  JsonWriter& Micros(DurationNs ns);
  // `json` must be one complete, valid JSON value.
  JsonWriter& Raw(std::string_view json);

  // Shorthands for one member of an object.
  JsonWriter& Member(std::string_view key, std::string_view value) {
    return Key(key).String(value);
  }
  JsonWriter& Member(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Member(std::string_view key, int64_t value) { return Key(key).Int(value); }
  JsonWriter& Member(std::string_view key, int value) { return Key(key).Int(value); }
  JsonWriter& Member(std::string_view key, uint64_t value) { return Key(key).Uint(value); }
  JsonWriter& Member(std::string_view key, uint32_t value) { return Key(key).Uint(value); }
  JsonWriter& Member(std::string_view key, bool value) { return Key(key).Bool(value); }

 private:
  void Separate();  // a comma before every value but the first of its container

  void MaybeSpill() {
    if (sink_ && out_->size() >= threshold_) Spill();
  }

  std::string* out_;
  std::function<bool(std::string_view)> sink_;
  size_t threshold_ = 0;
  bool sink_failed_ = false;
  bool first_ = true;       // no value yet in the innermost container
  bool after_key_ = false;  // the next value is a member's value: no comma
};

// Appends `value` to `out` as a quoted JSON string (see JsonWriter on invalid UTF-8).
void AppendJsonString(std::string_view value, std::string* out);

}  // namespace rankscope
