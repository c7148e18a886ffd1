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
