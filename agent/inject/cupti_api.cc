#include "agent/inject/cupti_api.h"

#include <dlfcn.h>

namespace rankscope::inject {
namespace {

// Resolves `name` into *fn; false if the library lacks it.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

// Fills every entry of *api from api->handle; returns the first missing required symbol, or
// nullptr when all are there.
const char* ResolveAll(CuptiApi* api) {
  void* h = api->handle;
  if (!Resolve(h, "cuptiSubscribe", &api->subscribe)) return "cuptiSubscribe";
  if (!Resolve(h, "cuptiUnsubscribe", &api->unsubscribe)) return "cuptiUnsubscribe";
  if (!Resolve(h, "cuptiActivityEnable", &api->activity_enable)) return "cuptiActivityEnable";
  if (!Resolve(h, "cuptiActivityDisable", &api->activity_disable)) return "cuptiActivityDisable";
  if (!Resolve(h, "cuptiActivityRegisterCallbacks", &api->activity_register_callbacks)) {
    return "cuptiActivityRegisterCallbacks";
  }
  if (!Resolve(h, "cuptiActivityFlushAll", &api->activity_flush_all)) {
    return "cuptiActivityFlushAll";
  }
  if (!Resolve(h, "cuptiActivityGetNextRecord", &api->activity_get_next_record)) {
    return "cuptiActivityGetNextRecord";
  }
  if (!Resolve(h, "cuptiActivityGetNumDroppedRecords", &api->activity_get_num_dropped_records)) {
    return "cuptiActivityGetNumDroppedRecords";
  }
  if (!Resolve(h, "cuptiGetResultString", &api->get_result_string)) return "cuptiGetResultString";
  Resolve(h, "cuptiActivityRegisterTimestampCallback", &api->activity_register_timestamp_callback);
  Resolve(h, "cuptiGetCallbackName", &api->get_callback_name);
  Resolve(h, "cuptiGetVersion", &api->get_version);
  Resolve(h, "cuptiSetThreadIdType", &api->set_thread_id_type);
  Resolve(h, "cuptiActivityEnableRuntimeApi", &api->activity_enable_runtime_api);
  Resolve(h, "cuptiActivityEnableDriverApi", &api->activity_enable_driver_api);
  return nullptr;
}

}  // namespace

Result<CuptiApi> LoadCupti(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    CuptiApi api;
    api.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api.handle == nullptr) {
      const char* why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") +
               (why != nullptr ? why : path + ": dlopen failed");
      continue;
    }
    if (const char* missing = ResolveAll(&api); missing != nullptr) {
      tried +=
          std::string(tried.empty() ? "" : "; ") + path + ": has no " + missing + " (too old?)";
      dlclose(api.handle);
      continue;
    }
    api.path = path;
    return api;
  }
  return Result<CuptiApi>::Error("no usable libcupti (RANKSCOPE_CUPTI_PATH names one): " + tried);
}

std::string CuptiErrorName(const CuptiApi& api, CUptiResult result) {
  const char* text = nullptr;
  if (api.get_result_string != nullptr && api.get_result_string(result, &text) == CUPTI_SUCCESS &&
      text != nullptr) {
    return text;
  }
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

}  // namespace rankscope::inject
