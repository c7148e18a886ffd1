// Durations, sizes and symbol names as people read them.
#pragma once

#include <cstdint>
#include <string>

#include "core/time.h"

namespace rankscope {

// "850 ns", "12.3 us", "1.23 ms", "4.56 s", "3m 07s"; negative values get a leading '-'.
std::string FormatDuration(DurationNs d);

// `value` through a printf format with one double conversion ("%.2f ms"); at most 63 chars.
std::string FormatDouble(const char* format, double value);

// "512 B", "64.0 KiB", "256.0 MiB" (binary units, as NCCL and nccl-tests sizes are).
std::string FormatBytes(Bytes b);

// "0x00c0ffee00000001": a 64-bit id (a communicator) as 16 hex digits.
std::string FormatHex(uint64_t value);

// A C++ symbol as people read it ("probe_axpy(int, float const*, float*)" for
// "_Z10probe_axpyiPKfPf"); names that do not demangle (C kernels, readable names) unchanged.
std::string Demangle(const std::string& symbol);

// `text` with &, <, >, " and ' replaced by entities: safe in HTML and XML element content and
// in quoted attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace rankscope
