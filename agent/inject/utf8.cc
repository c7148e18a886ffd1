#include "agent/inject/utf8.h"

#include <cstdint>

namespace rankscope::inject {

static_assert(sizeof(wchar_t) == 4, "NVTX wide strings are read as UTF-32");

size_t WideToUtf8(const wchar_t* wide, char* out, size_t cap) {
  if (wide == nullptr) return 0;
  size_t n = 0;
  for (const wchar_t* p = wide; *p != L'\0'; ++p) {
    uint32_t c = static_cast<uint32_t>(*p);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    unsigned char bytes[4];
    size_t len;
    if (c < 0x80) {
      bytes[0] = static_cast<unsigned char>(c);
      len = 1;
    } else if (c < 0x800) {
      bytes[0] = static_cast<unsigned char>(0xC0 | (c >> 6));
      bytes[1] = static_cast<unsigned char>(0x80 | (c & 0x3F));
      len = 2;
    } else if (c < 0x10000) {
      bytes[0] = static_cast<unsigned char>(0xE0 | (c >> 12));
      bytes[1] = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
      bytes[2] = static_cast<unsigned char>(0x80 | (c & 0x3F));
      len = 3;
    } else {
      bytes[0] = static_cast<unsigned char>(0xF0 | (c >> 18));
      bytes[1] = static_cast<unsigned char>(0x80 | ((c >> 12) & 0x3F));
      bytes[2] = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
      bytes[3] = static_cast<unsigned char>(0x80 | (c & 0x3F));
      len = 4;
    }
    if (n + len > cap) break;
    for (size_t i = 0; i < len; ++i) out[n + i] = static_cast<char>(bytes[i]);
    n += len;
  }
  return n;
}

}  // namespace rankscope::inject
