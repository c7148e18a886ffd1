#include "agent/inject/nvtx_strings.h"

#include <pthread.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>

#include "agent/inject/utf8.h"
#include "core/utf8.h"

namespace rankscope::inject {
namespace {

// Interned domains and strings. Leaked on purpose: handles must outlive static destructors.
struct Interned {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  std::unordered_map<std::string, nvtxDomainRegistration_st*> domains;
  // Keyed by the domain handle's bytes followed by the text.
  std::unordered_map<std::string, nvtxStringRegistration_st*> strings;
};
Interned& interned() {
  static Interned* i = new Interned;
  return *i;
}

Name& Label(nvtxDomainRegistration_st& d) { return d.name; }
Name& Label(nvtxStringRegistration_st& s) { return s.text; }

// Finds `key` in `map` or adds a new handle whose name is `text`. nullptr if out of memory.
template <typename Handle>
Handle* Intern(std::unordered_map<std::string, Handle*>& map, std::string_view key,
               std::string_view text) {
  Interned& in = interned();
  pthread_mutex_lock(&in.mu);
  Handle* result = nullptr;
  try {
    auto [it, inserted] = map.try_emplace(std::string(key), nullptr);
    if (inserted) {
      it->second = new Handle;
      Label(*it->second).Assign(text);
    }
    result = it->second;
  } catch (...) {
    result = nullptr;  // out of memory: the caller records under no name
  }
  pthread_mutex_unlock(&in.mu);
  return result;
}

}  // namespace

void Name::Assign(std::string_view s) {
  size_t n = s.size() < sizeof(bytes) ? s.size() : sizeof(bytes);
  std::memcpy(bytes, s.data(), n);
  size = static_cast<uint16_t>(n);
}

nvtxDomainHandle_t InternDomain(std::string_view name) {
  return Intern(interned().domains, name, name);
}

nvtxStringHandle_t InternString(nvtxDomainHandle_t domain, std::string_view text) {
  char key[sizeof(domain) + wire::kMaxNameBytes];
  std::memcpy(key, &domain, sizeof(domain));
  size_t n = text.size() < wire::kMaxNameBytes ? text.size() : wire::kMaxNameBytes;
  std::memcpy(key + sizeof(domain), text.data(), n);
  return Intern(interned().strings, std::string_view(key, sizeof(domain) + n), text);
}

std::string_view AsciiName(const char* message) {
  if (message == nullptr) return {};
  const std::string_view name(message, strnlen(message, wire::kMaxNameBytes + 1));
  return name.substr(0, Utf8Cut(name, wire::kMaxNameBytes));
}

std::string_view WideName(const wchar_t* message, Name* scratch) {
  scratch->size =
      static_cast<uint16_t>(WideToUtf8(message, scratch->bytes, sizeof(scratch->bytes)));
  return scratch->view();
}

std::string_view MessageOf(const nvtxEventAttributes_t* attributes, Name* scratch) {
  constexpr size_t kNeeded =
      offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxEventAttributes_t::message);
  if (attributes == nullptr || attributes->size < kNeeded) return {};
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return AsciiName(attributes->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return WideName(attributes->message.unicode, scratch);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return attributes->message.registered == nullptr
                 ? std::string_view()
                 : attributes->message.registered->text.view();
    default:
      return {};
  }
}

}  // namespace rankscope::inject
