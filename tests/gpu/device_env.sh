# Sourced by the tests/gpu scripts on the GPU machine: $1 (default device-prefix) is the bundle
# from scripts/device-bundle.sh. Sets prefix, out ($OUT or ./device-out, created), here, the
# bundle's libraries on LD_LIBRARY_PATH, and NCCL/PyTorch settings for that machine (NVLS and
# multicast off: KINDS.md).
prefix=$(cd "${1:-device-prefix}" && pwd)
out=${OUT:-$PWD/device-out}
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NO_COLOR=1
export PYTHONUNBUFFERED=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Builds mpi_gpu_steps.cu (the MPI + CUDA job of the GPU checks) into folder $1 with nvcc and
# MPI's flags; on failure prints the compiler's output and returns 1.
build_mpi_gpu_steps() {
  local nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  "$nvcc" -O2 -arch="${NVCC_ARCH:-sm_90}" -o "$1/mpi_gpu_steps" "$here/mpi_gpu_steps.cu" \
    $(mpicxx --showme:compile) $(mpicxx --showme:link) > "$out/build.txt" 2>&1 \
    || { echo "build failed"; cat "$out/build.txt"; return 1; }
}
