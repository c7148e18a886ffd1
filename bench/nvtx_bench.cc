// bench_nvtx: what an NVTX-annotated program pays per NVTX call. Without NVTX_INJECTION64_PATH
// NVTX3 turns every call after the first into an empty function; with it (librankscope_inject.so)
// each call is recorded. bench/run_inject_overhead.sh runs this both ways side by side.
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

namespace {

void BM_NvtxPushPop(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("bench_range");
    nvtxRangePop();
  }
}
BENCHMARK(BM_NvtxPushPop);

void BM_NvtxMark(benchmark::State& state) {
  for (auto _ : state) {
    nvtxMarkA("bench_mark");
  }
}
BENCHMARK(BM_NvtxMark);

}  // namespace

BENCHMARK_MAIN();
