// Names as the NVTX injection keeps them: domains and registered strings (the objects behind
// NVTX's opaque nvtxDomainHandle_t / nvtxStringHandle_t, which a tool defines), and the decoding
// of an event's message (ASCII, wide, or registered) into UTF-8 without allocating.
// Include with NVTX_NO_IMPL defined (the library's build does), so NVTX's own implementation is
// not compiled into the tool.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <string_view>

#include "core/wire.h"

namespace rankscope::inject {

// A UTF-8 name clipped to the wire format's limit, stored inline.
struct Name {
  uint16_t size = 0;
  char bytes[wire::kMaxNameBytes];

  std::string_view view() const { return {bytes, size}; }
  // Copies `s`, clipped to kMaxNameBytes.
  void Assign(std::string_view s);
};

}  // namespace rankscope::inject

// NVTX declares these handle types opaque for tools to define.
struct nvtxDomainRegistration_st {
  rankscope::inject::Name name;
};
struct nvtxStringRegistration_st {
  rankscope::inject::Name text;
};

namespace rankscope::inject {

// Returns the domain called `name`, creating it on first use: the same name always gives the
// same handle, and handles live until exit (nvtxDomainDestroy does not free them, since open
// ranges may still refer to them). nullptr if out of memory. Thread-safe; takes a lock.
nvtxDomainHandle_t InternDomain(std::string_view name);

// Returns the handle registered for `text` in `domain`, creating it on first use. Same lifetime
// and thread-safety as InternDomain.
nvtxStringHandle_t InternString(nvtxDomainHandle_t domain, std::string_view text);

// The domain's name; empty for the default (null) domain.
inline std::string_view DomainName(nvtxDomainHandle_t domain) {
  return domain == nullptr ? std::string_view() : domain->name.view();
}

// A NUL-terminated ASCII/UTF-8 message, clipped to kMaxNameBytes; empty for null.
std::string_view AsciiName(const char* message);

// A wide message converted into *scratch; the view lives as long as *scratch.
std::string_view WideName(const wchar_t* message, Name* scratch);

// The message of an event attribute struct (any message type), using *scratch for wide ones.
// Empty for a null struct, one too small to hold a message, or an unknown message type.
std::string_view MessageOf(const nvtxEventAttributes_t* attributes, Name* scratch);

}  // namespace rankscope::inject
