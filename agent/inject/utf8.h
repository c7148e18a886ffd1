// Wide (wchar_t) NVTX strings to UTF-8, into fixed buffers so the NVTX hot path never
// allocates.
#pragma once

#include <cstddef>

namespace rankscope::inject {

// Writes the NUL-terminated `wide` string (UTF-32, as wchar_t is on Linux) to out[0..cap) as
// UTF-8, stopping before a character that would not fit whole. Code points that are not valid
// Unicode scalar values become U+FFFD. Returns the bytes written (no terminator is added);
// 0 for a null `wide`.
size_t WideToUtf8(const wchar_t* wide, char* out, size_t cap);

}  // namespace rankscope::inject
