// Small text-scanning helpers private to model/nccl: number parsing that never throws
// (std::from_chars) and whitespace splitting over string_views. Not part of the public API.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace rankscope {

// Parses the whole of `text` as a signed integer in `base`; nullopt if anything is left over,
// the text is empty, or the value does not fit.
inline std::optional<int64_t> ParseInt(std::string_view text, int base = 10) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// Parses the whole of `text` as an unsigned integer in `base`.
inline std::optional<uint64_t> ParseUint(std::string_view text, int base = 10) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// Parses hexadecimal with or without a "0x" prefix ("0x1e900aa5c8e42401", "60").
inline std::optional<uint64_t> ParseHex(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  return ParseUint(text, 16);
}

// Parses a 32-bit int; nullopt when out of range.
inline std::optional<int32_t> ParseInt32(std::string_view text) {
  auto value = ParseInt(text);
  if (!value || *value < INT32_MIN || *value > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*value);
}

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Splits on runs of blanks; the views point into `text`.
inline std::vector<std::string_view> SplitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

// Splits on every occurrence of `sep` (empty pieces kept).
inline std::vector<std::string_view> SplitOn(std::string_view text, char sep) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

inline std::string_view TrimRight(std::string_view text) {
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace rankscope
