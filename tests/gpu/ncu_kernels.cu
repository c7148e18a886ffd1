// Three kernels whose bound is known by construction, for `rankscope inspect ncu` on real
// counters (run_ncu_inspect_check.sh): a tiny elementwise update (latency-bound), a STREAM triad
// over 768 MB (memory-bound) and a dependent FMA chain (compute-bound).
#include <cstdio>

__global__ void tiny_update(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.999f + 0.001f;
}

__global__ void stream_triad(float* a, const float* b, const float* c, float s, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    a[i] = b[i] + s * c[i];
  }
}

__global__ void fma_chain(float* out, const float* in, int n, int steps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = in[i];
  for (int k = 0; k < steps; ++k) v = v * 0.9999f + 0.0001f;
  out[i] = v;
}

int main() {
  const int small = 1 << 20;
  const long big = 64L << 20;
  float *x, *a, *b, *c;
  if (cudaMalloc(&x, small * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&a, big * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&b, big * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&c, big * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(x, 0, small * sizeof(float));
  cudaMemset(b, 0, big * sizeof(float));
  cudaMemset(c, 0, big * sizeof(float));
  tiny_update<<<small / 256, 256>>>(x, small);
  stream_triad<<<132 * 16, 256>>>(a, b, c, 3.0f, big);
  fma_chain<<<small / 256, 256>>>(a, x, small, 20000);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("ncu_kernels: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
