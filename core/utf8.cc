#include "core/utf8.h"

#include <cstdint>

namespace rankscope {
namespace {

// The length of the well-formed sequence at text[i], or 0 when none starts there; `maximal` is
// set to the length of the longest valid prefix of a sequence (what one U+FFFD replaces).
size_t SequenceAt(std::string_view text, size_t i, size_t* maximal) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  *maximal = 1;
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // at most U+10FFFF
  } else {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= text.size()) return 0;
    const uint8_t b = byte(i + k);
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return 0;
    *maximal = k + 1;
  }
  return n;
}

}  // namespace

size_t Utf8SequenceLength(std::string_view text, size_t i) {
  size_t maximal = 0;
  return SequenceAt(text, i, &maximal);
}

size_t Utf8Cut(std::string_view text, size_t max) {
  if (text.size() <= max) return text.size();
  size_t cut = max;
  while (cut > 0 && max - cut < 3 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t maximal = 0;
    const size_t n = SequenceAt(text, i, &maximal);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ValidUtf8(std::string_view text, int* replaced) {
  if (IsValidUtf8(text)) return std::string(text);
  if (replaced != nullptr) ++*replaced;
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    size_t maximal = 0;
    const size_t n = SequenceAt(text, i, &maximal);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      i += maximal;
    }
  }
  return out;
}

}  // namespace rankscope
