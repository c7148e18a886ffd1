#include "agent/nvml_sampler.h"

#include <chrono>
#include <system_error>
#include <utility>

#include "proto/convert.h"

namespace rankscope {

NvmlSampler::NvmlSampler(std::string library, DurationNs first_read_after, DurationNs period)
    : library_(std::move(library)), first_read_after_(first_read_after), period_(period) {}

NvmlSampler::~NvmlSampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NvmlSampler::Start() {
  try {
    thread_ = std::thread(&NvmlSampler::Loop, this);
  } catch (const std::system_error&) {
    // No thread: Finish reads once.
  }
}

void NvmlSampler::Record(Result<NvmlSnapshot> read) {
  read_once_ = true;
  if (!read.ok()) {
    error_ = read.status().message();
    return;
  }
  merged_ = merged_ ? MergeNvml(std::move(*merged_), read.value()) : std::move(read).value();
}

void NvmlSampler::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  DurationNs wait = first_read_after_;
  while (!wake_.wait_for(lock, std::chrono::nanoseconds(wait), [&] { return finishing_; })) {
    lock.unlock();
    Result<NvmlSnapshot> read = ReadNvml(library_);
    lock.lock();
    Record(std::move(read));
    if (!merged_) return;  // no driver here: one try is enough
    wait = period_;
  }
}

v1::NvmlReport NvmlSampler::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (!read_once_) Record(ReadNvml(library_));
  if (merged_) return ToProto(Result<NvmlSnapshot>(*merged_));
  return ToProto(Result<NvmlSnapshot>(Status::Error(error_)));
}

}  // namespace rankscope
