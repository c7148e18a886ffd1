#pragma once

// UTF-8 checks for text that comes from outside (program arguments, NVTX range names cut at a
// byte limit, NCCL log lines, topology dumps, file paths): everything the reports write as JSON
// or HTML must be valid UTF-8, and one stray byte must not cost a rank its data.

#include <string>
#include <string_view>

namespace rankscope {

// The length of the well-formed UTF-8 sequence that starts at text[i] (1 to 4), or 0 when the
// bytes there are not one.
size_t Utf8SequenceLength(std::string_view text, size_t i);

// Where to cut `text` to at most `max` bytes without splitting a character: `max`, or up to 3
// bytes before it when text[max] continues a character (the whole text when it fits).
size_t Utf8Cut(std::string_view text, size_t max);

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with each ill-formed part replaced by U+FFFD (the Unicode standard's "maximal subpart"
// practice: a truncated sequence is one replacement, a stray byte one each), so "caf\xE9" reads
// "caf\uFFFD" and a name cut in the middle of a character keeps everything before it. Valid
// text comes back unchanged. `replaced`, when given, is incremented once if anything was.
std::string ValidUtf8(std::string_view text, int* replaced = nullptr);

}  // namespace rankscope
