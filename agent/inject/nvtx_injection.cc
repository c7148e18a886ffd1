// NVTX injection. NVTX v3 is header-only: the first NVTX call in each module of the program
// loads the library named by NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2 with
// an export-table getter. We fill the CORE and CORE2 callback tables with the functions below;
// NVTX makes every function we leave out a no-op.
//
// Ranges are reported when they close (RangeRecord), marks at once (MarkRecord). Categories,
// colours, payloads, resource naming and thread naming are ignored.
#include <new>

#include "agent/inject/fast_clock.h"
#include "agent/inject/gpu_window.h"
#include "agent/inject/nvtx_ranges.h"
#include "agent/inject/nvtx_strings.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

constinit StartEndTable g_start_end;

// Per-thread push/pop stack, allocated on the thread's first push and freed at its exit.
thread_local PushPopStack* t_stack = nullptr;
struct StackReleaser {
  bool armed = false;
  ~StackReleaser() {
    delete t_stack;
    t_stack = nullptr;
  }
};
thread_local StackReleaser t_stack_releaser;

PushPopStack* ThisThreadStack() {
  if (t_stack == nullptr) {
    t_stack = new (std::nothrow) PushPopStack;
    t_stack_releaser.armed = true;  // first touch registers the thread-exit destructor
  }
  return t_stack;
}

int Push(nvtxDomainHandle_t domain, std::string_view name) {
  TimeNs now = FastNow();
  PushPopStack* stack = ThisThreadStack();
  if (stack == nullptr) return NVTX_NO_PUSH_POP_TRACKING;
  GpuWindowRangeOpened(name);
  return stack->Push(domain, name, now);
}

int Pop(nvtxDomainHandle_t domain) {
  TimeNs now = FastNow();
  PushPopStack* stack = t_stack;
  if (stack == nullptr) return -1;
  OpenRange closed;
  bool overflowed = false;
  int depth = stack->Pop(domain, &closed, &overflowed);
  if (overflowed) {
    CountDropped(1);
  } else if (depth >= 0) {
    EmitRange(DomainName(domain), closed.name.view(), closed.start, now, ThreadId(), closed.depth);
    GpuWindowRangeClosed(closed.name.view());
  }
  return depth;
}

nvtxRangeId_t Start(nvtxDomainHandle_t domain, std::string_view name) {
  TimeNs now = FastNow();
  uint64_t id = g_start_end.Start(domain, name, now, ThreadId());
  GpuWindowRangeOpened(name);
  if (id == 0) {
    CountDropped(1);
    static std::atomic<bool> said{false};
    NoticeOnce(said, "more than 1024 NVTX start/end ranges open at once; some are not recorded");
  }
  return id;
}

void End(nvtxRangeId_t id) {
  TimeNs now = FastNow();
  OpenRange closed;
  if (!g_start_end.End(id, &closed)) return;
  EmitRange(DomainName(closed.domain), closed.name.view(), closed.start, now, closed.tid, 0);
  GpuWindowRangeClosed(closed.name.view());
}

void Mark(nvtxDomainHandle_t domain, std::string_view name) {
  EmitMark(DomainName(domain), name, FastNow(), ThreadId());
}

// ---- CORE callbacks (default domain) ----

void NVTX_API MarkEx(const nvtxEventAttributes_t* attributes) {
  if (!Active()) return;
  Name scratch;
  Mark(nullptr, MessageOf(attributes, &scratch));
}
void NVTX_API MarkA(const char* message) {
  if (!Active()) return;
  Mark(nullptr, AsciiName(message));
}
void NVTX_API MarkW(const wchar_t* message) {
  if (!Active()) return;
  Name scratch;
  Mark(nullptr, WideName(message, &scratch));
}

nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* attributes) {
  if (!Active()) return 0;
  Name scratch;
  return Start(nullptr, MessageOf(attributes, &scratch));
}
nvtxRangeId_t NVTX_API RangeStartA(const char* message) {
  if (!Active()) return 0;
  return Start(nullptr, AsciiName(message));
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* message) {
  if (!Active()) return 0;
  Name scratch;
  return Start(nullptr, WideName(message, &scratch));
}
void NVTX_API RangeEnd(nvtxRangeId_t id) {
  if (!Active()) return;
  End(id);
}

int NVTX_API RangePushEx(const nvtxEventAttributes_t* attributes) {
  if (!Active()) return NVTX_NO_PUSH_POP_TRACKING;
  Name scratch;
  return Push(nullptr, MessageOf(attributes, &scratch));
}
int NVTX_API RangePushA(const char* message) {
  if (!Active()) return NVTX_NO_PUSH_POP_TRACKING;
  return Push(nullptr, AsciiName(message));
}
int NVTX_API RangePushW(const wchar_t* message) {
  if (!Active()) return NVTX_NO_PUSH_POP_TRACKING;
  Name scratch;
  return Push(nullptr, WideName(message, &scratch));
}
int NVTX_API RangePop() {
  if (!Active()) return NVTX_NO_PUSH_POP_TRACKING;
  return Pop(nullptr);
}

// ---- CORE2 callbacks (explicit domains) ----

void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  if (!Active()) return;
  Name scratch;
  Mark(domain, MessageOf(attributes, &scratch));
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* attributes) {
  if (!Active()) return 0;
  Name scratch;
  return Start(domain, MessageOf(attributes, &scratch));
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t /*domain*/, nvtxRangeId_t id) {
  if (!Active()) return;
  End(id);
}
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  if (!Active()) return NVTX_NO_PUSH_POP_TRACKING;
  Name scratch;
  return Push(domain, MessageOf(attributes, &scratch));
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t domain) {
  if (!Active()) return NVTX_NO_PUSH_POP_TRACKING;
  return Pop(domain);
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t domain, const char* text) {
  return InternString(domain, AsciiName(text));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t domain, const wchar_t* text) {
  Name scratch;
  return InternString(domain, WideName(text, &scratch));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  return InternDomain(AsciiName(name));
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  Name scratch;
  return InternDomain(WideName(name, &scratch));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t /*domain*/) {
  // Kept: ranges still open in the domain, and events already queued, refer to its name.
}

// Points callback `id` of a module's table at `fn`, if this NVTX version has that slot.
template <typename Fn>
void Hook(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id] != nullptr) {
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
}

bool HookCore(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) {
    return false;
  }
  Hook(table, size, NVTX_CBID_CORE_MarkEx, MarkEx);
  Hook(table, size, NVTX_CBID_CORE_MarkA, MarkA);
  Hook(table, size, NVTX_CBID_CORE_MarkW, MarkW);
  Hook(table, size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  Hook(table, size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  Hook(table, size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  Hook(table, size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  Hook(table, size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Hook(table, size, NVTX_CBID_CORE_RangePushA, RangePushA);
  Hook(table, size, NVTX_CBID_CORE_RangePushW, RangePushW);
  Hook(table, size, NVTX_CBID_CORE_RangePop, RangePop);
  return true;
}

bool HookCore2(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) {
    return false;
  }
  Hook(table, size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
  Hook(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
  Hook(table, size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
  Hook(table, size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
  Hook(table, size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
  Hook(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
  Hook(table, size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
  Hook(table, size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
  Hook(table, size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
  Hook(table, size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  return true;
}

}  // namespace
}  // namespace rankscope::inject

// Called by NVTX once per instrumented module. Returning 0 tells NVTX to make every call a
// no-op, which is what an inert library (no agent socket) wants.
extern "C" __attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  namespace ri = rankscope::inject;
  if (!ri::Active() || get_export_table == nullptr) return 0;
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  if (!ri::HookCore(callbacks) || !ri::HookCore2(callbacks)) return 0;
  auto* version =
      static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
  if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return 1;
}
