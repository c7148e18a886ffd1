// An MPI program whose ranks compute on the GPU between collectives, for the GPU checks on a
// one-GPU machine (every rank shares the GPU): per step a few short kernels, a device sync and an
// MPI_Allreduce; the rank named by --heavy-rank also runs `heavy_stencil` for about --heavy-ms
// each step, so it is the straggler whose kernel the report must name.
//
// usage: mpirun -np N mpi_gpu_steps [--steps S] [--heavy-rank R] [--heavy-ms MS]
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void axpy_small(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.5f * x[i] + y[i];
}

__global__ void heavy_stencil(float* y, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = y[i];
  for (int k = 0; k < iters; ++k) v = v * 0.999f + 0.001f * __sinf(v);
  y[i] = v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int steps = 200, heavy_rank = -1;
  double heavy_ms = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--heavy-rank")) heavy_rank = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--heavy-ms")) heavy_ms = std::atof(argv[i + 1]);
  }
  const int n = 1 << 16;
  float *x = nullptr, *y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  // Iterations for about heavy_ms, measured by the heavy rank alone (the GPU is shared: measured
  // beside the others' kernels it would come out short).
  int iters = 1000;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == heavy_rank) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    heavy_stencil<<<n / 256, 256>>>(y, n, iters);  // warm up
    cudaEventRecord(a);
    heavy_stencil<<<n / 256, 256>>>(y, n, iters);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 1;
    cudaEventElapsedTime(&ms, a, b);
    iters = static_cast<int>(iters * heavy_ms / (ms > 0.01f ? ms : 0.01f));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double sum = 0, in = 1;
  for (int s = 0; s < steps; ++s) {
    for (int k = 0; k < 8; ++k) axpy_small<<<n / 256, 256>>>(y, x, n);
    if (rank == heavy_rank) heavy_stencil<<<n / 256, 256>>>(y, n, iters);
    cudaDeviceSynchronize();
    MPI_Allreduce(&in, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0) std::printf("mpi_gpu_steps: %d steps, heavy rank %d (%d iterations)\n", steps,
                             heavy_rank, iters);
  cudaFree(x);
  cudaFree(y);
  MPI_Finalize();
  return 0;
}
