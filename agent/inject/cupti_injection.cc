// CUPTI activity capture. The CUDA driver loads the library named by CUDA_INJECTION64_PATH
// while it initializes (cuInit) and calls its InitializeInjection; from there we subscribe to
// CUPTI, point its timestamps at CLOCK_MONOTONIC, hand it buffers from a bounded pool, and turn
// each completed buffer into GpuActivityRecords for the record sink.
//
// Who calls what, on which thread:
//   InitializeInjection   the program's thread inside cuInit; once per process
//   BufferRequested       any thread that launches work, when CUPTI needs a fresh buffer
//   BufferCompleted       CUPTI's worker thread, or whoever calls cuptiActivityFlushAll
//   FlushLoop             our own thread: cuptiActivityFlushAll every flush_period, so records
//                         reach the agent while the program runs, not only at exit
//   PreFlush              inside the sink's FlushAll (MPI_Finalize, exit): a forced flush first
//   AtExit                exit(), from whichever thread called it: stop FlushLoop, force a
//                         last flush, send everything
//
// Nothing here may crash or stall the program: every failure ends in one notice to the agent
// ("CUPTI unavailable: <why>; continuing without GPU activity") and the program runs on without
// GPU records.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "agent/inject/capture_window.h"
#include "agent/inject/cupti_api.h"
#include "agent/inject/cupti_buffer_pool.h"
#include "agent/inject/cupti_config.h"
#include "agent/inject/cupti_records.h"
#include "agent/inject/gpu_window.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

// Everything a running capture holds. Created once and leaked on purpose: CUPTI may call back
// into it until the very end of the process, after static destructors have run.
struct Capture {
  Capture(CuptiConfig c, CuptiApi a)
      : config(std::move(c)), api(std::move(a)), pool(config.buffer_count, config.buffer_bytes) {}

  const CuptiConfig config;
  const CuptiApi api;
  CuptiBufferPool pool;
  ConvertOptions convert;
  pid_t pid = getpid();  // a forked child inherits none of our threads; it leaves CUPTI alone

  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;  // guarded by mu
  std::thread flusher;
  std::atomic<bool> closed{false};  // the exit-time flush ran; nothing more goes to CUPTI
};

// How long one completed buffer's records may wait in total for room on the agent socket.
constexpr DurationNs kBufferSendBudget = 2 * kNsPerSec;

std::atomic<Capture*> g_capture{nullptr};
std::atomic<bool> g_initialized{false};

std::atomic<bool> g_said_unavailable{false};
std::atomic<bool> g_said_config{false};
std::atomic<bool> g_said_kinds{false};
std::atomic<bool> g_said_clock{false};
std::atomic<bool> g_said_pool{false};
std::atomic<bool> g_said_dropped{false};
std::atomic<bool> g_said_internal{false};
std::atomic<bool> g_said_launch_apis{false};

void Unavailable(std::string_view why) {
  std::string text = "CUPTI unavailable: ";
  text.append(why);
  text.append("; continuing without GPU activity");
  NoticeOnce(g_said_unavailable, text);
}

// ---- CUPTI callbacks ----

uint64_t CUPTIAPI MonotonicTimestamp() { return static_cast<uint64_t>(MonotonicNow()); }

// cuptiSubscribe wants a callback; we enable no callback domains, so it is never called. The
// subscription is what claims CUPTI: a second tool (Nsight, torch.profiler) is refused instead
// of silently taking over our activity buffers, and we are refused if one came first.
void CUPTIAPI IgnoreCallback(void* /*userdata*/, CUpti_CallbackDomain /*domain*/,
                             CUpti_CallbackId /*cbid*/, const void* /*cbdata*/) {}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Capture* c = g_capture.load(std::memory_order_acquire);
  *max_records = 0;  // as many as fit
  *buffer = c != nullptr ? c->pool.Acquire() : nullptr;
  *size = *buffer != nullptr ? c->pool.buffer_bytes() : 0;
  if (*buffer == nullptr && c != nullptr) {
    // Declining is allowed: CUPTI drops the records and counts them (read in BufferCompleted).
    NoticeOnce(g_said_pool,
               "CUPTI buffer pool exhausted (RANKSCOPE_CUPTI_BUFFERS x RANKSCOPE_CUPTI_BUFFER_KB); "
               "GPU activity records are being dropped");
  }
}

// API call names by domain and callback id, looked up once each. The strings are CUPTI's own
// constants.
constexpr uint32_t kNameCacheSize = 2048;
std::atomic<const char*> g_runtime_names[kNameCacheSize];
std::atomic<const char*> g_driver_names[kNameCacheSize];

const char* ApiName(CUpti_CallbackDomain domain, uint32_t cbid) {
  Capture* c = g_capture.load(std::memory_order_acquire);
  std::atomic<const char*>* cache =
      domain == CUPTI_CB_DOMAIN_DRIVER_API ? g_driver_names : g_runtime_names;
  if (cbid < kNameCacheSize) {
    if (const char* cached = cache[cbid].load(std::memory_order_relaxed)) return cached;
  }
  const char* name = nullptr;
  if (c == nullptr || c->api.get_callback_name == nullptr ||
      c->api.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS) {
    return nullptr;
  }
  if (cbid < kNameCacheSize) cache[cbid].store(name, std::memory_order_relaxed);
  return name;
}

// Converts and emits every record in `buffer`; returns how many CUPTI could not time.
uint32_t EmitRecords(const Capture& c, uint8_t* buffer, size_t valid) {
  GpuActivityRecord scratch;
  uint32_t untimed = 0;
  CUpti_Activity* record = nullptr;
  // Stops at CUPTI_ERROR_MAX_LIMIT_REACHED (end of buffer) or at a record it cannot parse.
  while (c.api.activity_get_next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (ConvertActivity(*record, c.convert, &scratch)) {
      case Conversion::kRecord:
        EmitGpuActivity(scratch);
        break;
      case Conversion::kUntimed:
        ++untimed;
        break;
      case Conversion::kIgnored:
        break;
    }
  }
  return untimed;
}

void CUPTIAPI BufferCompleted(CUcontext /*context*/, uint32_t /*stream*/, uint8_t* buffer,
                              size_t /*size*/, size_t valid) {
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (c == nullptr) return;  // cannot happen: callbacks are registered after g_capture is set
  // An exception must not unwind into CUPTI (C code): the only source is a name's allocation.
  try {
    if (Active() && valid > 0 && !c->config.discard) {
      // One buffer is tens of thousands of records: let the sends wait for the agent to read
      // rather than drop, but bounded, since this may run inside the program's exit.
      SendWaitScope wait(MonotonicNow() + kBufferSendBudget);
      uint32_t lost = EmitRecords(*c, buffer, valid);
      size_t dropped = 0;
      if (c->api.activity_get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS &&
          dropped > 0) {
        NoticeOnce(g_said_dropped, "CUPTI dropped GPU activity records (no buffer space)");
        lost += static_cast<uint32_t>(dropped);
      }
      if (lost > 0) CountDropped(lost);
      FlushThisThread();
    }
  } catch (...) {
    CountDropped(1);
    NoticeOnce(g_said_internal, "out of memory converting CUPTI records; some were lost");
  }
  c->pool.Release(buffer);
}

// ---- flushing ----

void FollowControlPage();  // below, with the capture window

void FlushLoop(Capture* c) {
  std::unique_lock<std::mutex> lock(c->mu);
  while (!c->stopping) {
    c->wake.wait_for(lock, std::chrono::nanoseconds(c->config.flush_period));
    if (c->stopping) break;
    lock.unlock();
    FollowControlPage();
    // Unforced: delivers the buffers whose records are all complete; kernels still running
    // stay with CUPTI until a later flush.
    if (Active()) c->api.activity_flush_all(0);
    lock.lock();
  }
}

// Starts FlushLoop with every signal blocked, so the program's signals keep going to its own
// threads.
bool StartFlusher(Capture* c) {
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  bool started = true;
  try {
    c->flusher = std::thread(FlushLoop, c);
    pthread_setname_np(c->flusher.native_handle(), "rankscope-cupti");
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return started;
}

bool InThisProcess(const Capture* c) { return c != nullptr && c->pid == getpid(); }

// Runs at the start of the sink's FlushAll (MPI_Finalize; exit): forced, so buffers holding
// records of work still in flight come too (those records arrive untimed and count as dropped).
void PreFlush() {
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (!InThisProcess(c) || c->closed.load()) return;
  c->api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

// Registered with atexit from InitializeInjection, so it runs on exit() from any thread and on
// return from main, before the sink's own exit-time flush (a library destructor, which runs after
// every atexit handler).
void AtExit() {
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (!InThisProcess(c)) return;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    c->stopping = true;
  }
  c->wake.notify_all();
  if (c->flusher.joinable() && c->flusher.get_id() != std::this_thread::get_id()) {
    c->flusher.join();
  }
  if (!c->closed.exchange(true) && Active()) {
    c->api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  FlushAll();
}

// ---- start ----

// Turns tracing of the launch calls (LaunchApis) on or off one call id at a time; false when this
// CUPTI cannot (older than 12.6) or refuses the first id.
bool SetLaunchApis(const CuptiApi& api, bool on) {
  if (api.activity_enable_runtime_api == nullptr || api.activity_enable_driver_api == nullptr) {
    return false;
  }
  const LaunchApiIds& ids = LaunchApis();
  bool ok = true;
  for (uint32_t cbid : ids.runtime) {
    ok = api.activity_enable_runtime_api(cbid, on ? 1 : 0) == CUPTI_SUCCESS && ok;
  }
  for (uint32_t cbid : ids.driver) {
    ok = api.activity_enable_driver_api(cbid, on ? 1 : 0) == CUPTI_SUCCESS && ok;
  }
  return ok;
}

// Enables the activity kinds `mode` asks for. False when kernels cannot be enabled (nothing
// worth keeping then); other kinds that fail are named in a notice and skipped.
bool EnableKinds(const CuptiApi& api, const CuptiConfig& config, std::string* why) {
  const CuptiMode mode = config.mode;
  if (CUptiResult r = api.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      r != CUPTI_SUCCESS) {
    *why = "cuptiActivityEnable(CONCURRENT_KERNEL): " + CuptiErrorName(api, r);
    return false;
  }
  // Mode all traces the launch calls alone where CUPTI can pick them; older CUPTI traces every
  // runtime call instead (and no driver call: the whole DRIVER kind would cost more still).
  const bool launches = mode == CuptiMode::kAll || mode == CuptiMode::kApi;
  const bool picked = launches && config.pick_launch_calls && SetLaunchApis(api, true);
  if (launches && config.pick_launch_calls && !picked) {
    NoticeOnce(g_said_launch_apis,
               "this CUPTI cannot trace single API calls (CUPTI 12.6+ can); tracing every CUDA "
               "runtime call instead, which costs more on launch-bound loops, and no driver-API "
               "launches (NCCL's)");
  }
  struct Kind {
    CUpti_ActivityKind kind;
    const char* name;
    bool wanted;
  };
  const Kind others[] = {
      {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", mode != CuptiMode::kKernels},
      {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", mode != CuptiMode::kKernels},
      {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION",
       mode != CuptiMode::kKernels && config.synchronization},
      {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", mode == CuptiMode::kApi || (launches && !picked)},
  };
  std::string failed;
  for (const Kind& k : others) {
    if (!k.wanted) continue;
    if (CUptiResult r = api.activity_enable(k.kind); r != CUPTI_SUCCESS) {
      failed +=
          std::string(failed.empty() ? "" : ", ") + k.name + " (" + CuptiErrorName(api, r) + ")";
    }
  }
  if (!failed.empty()) {
    NoticeOnce(g_said_kinds, "CUPTI could not enable " + failed + "; capturing the other kinds");
  }
  return true;
}

// Disables every kind and call EnableKinds may have enabled (disabling one that is off is
// harmless).
void DisableKinds(const CuptiApi& api) {
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                  CUPTI_ACTIVITY_KIND_RUNTIME}) {
    api.activity_disable(kind);
  }
  SetLaunchApis(api, false);
}

// ---- the capture window ----

const char* GetEnv(const char* name) { return std::getenv(name); }

// Built from the environment on first use (the first NVTX range or CUDA's start, whichever
// comes first) and leaked, like Capture.
CaptureWindow& Window() {
  static CaptureWindow* window = new CaptureWindow(CaptureWindowFromEnv(GetEnv));
  return *window;
}

// Serializes turning kinds on and off with Start, so a window that opens while CUDA starts is
// applied exactly once it can be.
std::mutex g_window_mu;

bool g_kinds_on = false;       // guarded by g_window_mu: CUPTI's kinds are enabled now
bool g_last_capturing = true;  // guarded by g_window_mu: the control page when last looked at

// Puts CUPTI's kinds where the capture window and the control page (dormant or capturing) want
// them; a flush after turning them off, so the window's records reach the agent soon. Requires
// g_window_mu.
void SyncKindsLocked(Capture* c) {
  const bool want = Window().on() && Capturing();
  if (want == g_kinds_on) return;
  if (want) {
    std::string why;
    if (!EnableKinds(c->api, c->config, &why)) {
      Unavailable(why);
      return;
    }
  } else {
    DisableKinds(c->api);
    c->api.activity_flush_all(0);
  }
  g_kinds_on = want;
}

// Follows a change of the window, with a mark "gpu capture on|off" in domain "rankscope" so the
// coordinator knows which spans of the run have GPU activity.
void ApplyWindowChange(CaptureWindow::Change change) {
  if (change == CaptureWindow::Change::kNone || !Active()) return;
  const bool on = change == CaptureWindow::Change::kOn;
  EmitMark("rankscope", on ? "gpu capture on" : "gpu capture off", MonotonicNow(), ThreadId());
  std::lock_guard<std::mutex> lock(g_window_mu);
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (!InThisProcess(c) || c->closed.load()) return;  // CUDA not started (yet): Start applies it
  SyncKindsLocked(c);
}

// Follows the control page (`rankscope capture` on a dormant run), from the flush thread. The
// start is marked "gpu capture on"; the stop cannot be (nothing is recorded once dormant).
void FollowControlPage() {
  const bool capturing = Capturing();
  std::lock_guard<std::mutex> lock(g_window_mu);
  if (capturing == g_last_capturing) return;
  g_last_capturing = capturing;
  if (capturing) EmitMark("rankscope", "gpu capture on", MonotonicNow(), ThreadId());
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (InThisProcess(c) && !c->closed.load()) SyncKindsLocked(c);
}

// Sets CUPTI's clock to CLOCK_MONOTONIC; without the callback (CUPTI older than 12.x) shifts
// CUPTI's default CLOCK_REALTIME by the offset measured now, which is off by any later NTP step.
void SetClock(Capture* c) {
  if (c->api.activity_register_timestamp_callback != nullptr &&
      c->api.activity_register_timestamp_callback(MonotonicTimestamp) == CUPTI_SUCCESS) {
    c->convert.clock_offset = 0;
    return;
  }
  c->convert.clock_offset = -RealtimeMinusMonotonic();
  NoticeOnce(g_said_clock,
             "CUPTI has no timestamp callback; GPU times are CUPTI's CLOCK_REALTIME shifted by "
             "the offset measured at start");
}

// Subscribes, sets the clock, registers the buffer callbacks, enables the kinds, and starts the
// flusher. On failure says why in *why and leaves CUPTI unsubscribed.
bool Start(Capture* c, std::string* why) {
  const CuptiApi& api = c->api;
  CUpti_SubscriberHandle subscriber = nullptr;
  if (CUptiResult r = api.subscribe(&subscriber, IgnoreCallback, nullptr); r != CUPTI_SUCCESS) {
    *why = "cuptiSubscribe: " + CuptiErrorName(api, r);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      *why += " (another profiler, e.g. Nsight Systems or torch.profiler, holds CUPTI)";
    }
    return false;
  }
  // Before any kind is enabled, as CUPTI's documentation asks, so every record uses them.
  SetClock(c);
  // Runtime records then name threads by gettid(), like NVTX ranges and MPI calls; CUPTI's
  // default is pthread_self() cut to 32 bits, which matches nothing else.
  if (api.set_thread_id_type != nullptr) {
    api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  }
  c->convert.api_name = ApiName;
  g_capture.store(c, std::memory_order_release);
  bool ok = true;
  if (CUptiResult r = api.activity_register_callbacks(BufferRequested, BufferCompleted);
      r != CUPTI_SUCCESS) {
    *why = "cuptiActivityRegisterCallbacks: " + CuptiErrorName(api, r);
    ok = false;
  } else {
    // Outside a capture window, or dormant, the kinds stay off until that changes.
    std::lock_guard<std::mutex> lock(g_window_mu);
    g_last_capturing = Capturing();
    if (Window().on() && g_last_capturing) {
      if (EnableKinds(api, c->config, why)) {
        g_kinds_on = true;
      } else {
        ok = false;
      }
    }
  }
  if (!ok) {
    api.unsubscribe(subscriber);  // so another tool may use CUPTI
    return false;
  }
  if (!StartFlusher(c)) {
    NoticeOnce(g_said_internal,
               "could not start the CUPTI flush thread; GPU records arrive when buffers fill "
               "and at exit");
  }
  std::atexit(AtExit);
  AddPreFlushHook(PreFlush);
  return true;
}

void Initialize() {
  CuptiConfig config = CuptiConfigFromEnv(GetEnv);
  if (!config.problems.empty()) {
    std::string text = "CUPTI settings: ";
    for (size_t i = 0; i < config.problems.size(); ++i) {
      text += (i == 0 ? "" : "; ") + config.problems[i];
    }
    NoticeOnce(g_said_config, text);
  }
  Result<CuptiApi> api = LoadCupti(CuptiLibraryCandidates(config, GetEnv));
  if (!api.ok()) {
    Unavailable(api.status().message());
    return;
  }
  auto* capture = new (std::nothrow) Capture(std::move(config), std::move(api).value());
  if (capture == nullptr) {
    Unavailable("out of memory");
    return;
  }
  std::string why;
  if (!Start(capture, &why)) {
    Unavailable(why + " [" + capture->api.path + "]");
    return;
  }
  const CaptureWindowConfig& window = Window().config();
  static std::atomic<bool> said_window{false};
  if (window.kind != CaptureWindowConfig::Kind::kWholeRun || !window.problems.empty()) {
    std::string text = "GPU capture window: " + window.Describe();
    for (const std::string& p : window.problems) text += "; " + p;
    NoticeOnce(said_window, text);
  }
}

}  // namespace

void GpuWindowRangeOpened(std::string_view name) {
  CaptureWindow& w = Window();
  if (w.config().kind == CaptureWindowConfig::Kind::kWholeRun) return;
  ApplyWindowChange(w.Opened(name));
}

void GpuWindowRangeClosed(std::string_view name) {
  CaptureWindow& w = Window();
  if (w.config().kind == CaptureWindowConfig::Kind::kWholeRun) return;
  ApplyWindowChange(w.Closed(name));
}
}  // namespace rankscope::inject

// Called by the CUDA driver, once, while it initializes. Always reports success: the program's
// CUDA must work whether or not we capture. Inert (nothing loaded, nothing enabled) without
// RANKSCOPE_IPC_SOCKET.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  namespace ri = rankscope::inject;
  if (!ri::Active() || ri::g_initialized.exchange(true)) return 1;
  try {
    ri::Initialize();
  } catch (...) {
    ri::Unavailable("out of memory while starting");
  }
  return 1;
}
