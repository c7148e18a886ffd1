// The CUPTI functions the capture uses, resolved with dlopen/dlsym at run time. rankscope never
// links libcupti: the inject library must load on nodes without CUDA, and the libcupti that
// matches the node's driver is the one the node has (or the one the program already loaded,
// e.g. PyTorch's). The CUPTI headers supply only types and constants.
#pragma once

#include <cupti.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace rankscope::inject {

// Function pointers into one loaded libcupti. Required entries are never null after a
// successful LoadCupti; optional ones may be.
struct CuptiApi {
  void* handle = nullptr;
  std::string path;  // the candidate that loaded

  CUptiResult(CUPTIAPI* subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult(CUPTIAPI* unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult(CUPTIAPI* activity_enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult(CUPTIAPI* activity_disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult(CUPTIAPI* activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                                     CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult(CUPTIAPI* activity_flush_all)(uint32_t) = nullptr;
  CUptiResult(CUPTIAPI* activity_get_next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult(CUPTIAPI* activity_get_num_dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult(CUPTIAPI* get_result_string)(CUptiResult, const char**) = nullptr;

  // Optional. Without the timestamp callback (older CUPTI) times are shifted by a measured
  // offset instead; without callback names runtime calls are named by id; without the thread id
  // type runtime records carry CUPTI's default thread id.
  CUptiResult(CUPTIAPI* activity_register_timestamp_callback)(CUpti_TimestampCallbackFunc) =
      nullptr;
  CUptiResult(CUPTIAPI* get_callback_name)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult(CUPTIAPI* get_version)(uint32_t*) = nullptr;
  CUptiResult(CUPTIAPI* set_thread_id_type)(CUpti_ActivityThreadIdType) = nullptr;
  // Per-call-id API tracing (CUPTI 12.6+): without them launch calls are traced by enabling the
  // whole RUNTIME kind, which records every runtime call and costs more.
  CUptiResult(CUPTIAPI* activity_enable_runtime_api)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult(CUPTIAPI* activity_enable_driver_api)(CUpti_CallbackId, uint8_t) = nullptr;
};

// Loads the first of `candidates` that dlopens and has every required function. On failure the
// message gives, on one line, dlerror's reason or the missing symbol for each candidate. The
// library stays loaded for the life of the process (CUPTI keeps threads and callbacks into us).
Result<CuptiApi> LoadCupti(const std::vector<std::string>& candidates);

// "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" and the like, or "CUPTI error <n>".
std::string CuptiErrorName(const CuptiApi& api, CUptiResult result);

}  // namespace rankscope::inject
