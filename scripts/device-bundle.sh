#!/usr/bin/env bash
# Packs what the GPU machine needs to run rankscope (it has no gRPC/protobuf and no network):
# build/bin and build/lib executables and libraries into device-prefix/, plus every shared
# library they load from outside glibc/libstdc++/libgcc/MPI/CUDA (gRPC, protobuf, abseil, re2,
# c-ares, openssl, zlib, sqlite, pugixml). Run there with LD_LIBRARY_PATH=device-prefix/lib
# (RUNPATH alone does not cover the libraries' own dependencies). See TESTBED.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=device-prefix
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "$build"/bin/* "$out/bin/"
cp "$build"/lib/*.so "$out/lib/" 2>/dev/null || true
# The GPU machine brings its own libc, C++ runtime, MPI and CUDA; everything else travels.
skip='^(linux-vdso|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s|libmpi|libopen-|libpmix|libhwloc|libevent|libcuda|libcudart|libcupti|libnccl|libnvidia)'
for f in "$out"/bin/* "$out"/lib/*.so; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done
done
# Debug info is not needed there and would blow the 64 MiB carry limit.
strip --strip-debug "$out"/bin/* "$out"/lib/* 2>/dev/null || true
du -sh "$out" | awk '{print "device-bundle: " $1 " in '"$out"'/"}'
