#include "coordinator/report/json_writer.h"

#include <charconv>
#include <cmath>

#include "core/utf8.h"

namespace rankscope {

void AppendJsonString(std::string_view value, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < value.size()) {
    // Copy the longest run that needs no escaping in one append.
    size_t run = i;
    while (run < value.size()) {
      const unsigned char c = static_cast<unsigned char>(value[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++run;
    }
    out->append(value.data() + i, run - i);
    i = run;
    if (i == value.size()) break;
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const size_t len = Utf8SequenceLength(value, i);
      if (len == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD for one bad byte
        ++i;
      } else {
        out->append(value.data() + i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xF]);
    }
    ++i;
  }
  out->push_back('"');
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
  } else if (!first_) {
    out_->push_back(',');
  }
  first_ = false;
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  out_->push_back('{');
  first_ = true;
  return *this;
}

bool JsonWriter::Spill() {
  if (!sink_) return true;
  if (!sink_failed_ && !out_->empty()) sink_failed_ = !sink_(*out_);
  out_->clear();
  return !sink_failed_;
}

JsonWriter& JsonWriter::EndObject() {
  out_->push_back('}');
  first_ = false;
  MaybeSpill();
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Separate();
  out_->push_back('[');
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  out_->push_back(']');
  first_ = false;
  MaybeSpill();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  Separate();
  AppendJsonString(key, out_);
  out_->push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  Separate();
  AppendJsonString(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  Separate();
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_->append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  Separate();
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_->append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  Separate();
  out_->append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  Separate();
  if (!std::isfinite(value)) {
    out_->append("null");
    return *this;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_->append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::Micros(DurationNs ns) {
  Separate();
  const bool negative = ns < 0;
  // Magnitude as unsigned, so INT64_MIN does not overflow.
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buffer[32];
  char* p = buffer;
  if (negative) *p++ = '-';
  p = std::to_chars(p, buffer + sizeof(buffer), magnitude / 1000).ptr;
  const unsigned fraction = static_cast<unsigned>(magnitude % 1000);
  if (fraction != 0) {
    *p++ = '.';
    *p++ = static_cast<char>('0' + fraction / 100);
    *p++ = static_cast<char>('0' + fraction / 10 % 10);
    *p++ = static_cast<char>('0' + fraction % 10);
  }
  out_->append(buffer, p);
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  Separate();
  out_->append(json);
  return *this;
}

}  // namespace rankscope
