#!/bin/sh
# conformance_test.sh PROGRAM NVIDIA_LIBDIR SIMGPU_LIBDIR
# Runs the conformance transcript (conformance.h) on NVIDIA's libcudnn.so.9 and on simgpu's; fails unless both
# runs succeed and print the same transcript.
set -u
program=$1 nvidia=$2 simgpu=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/cudnn-conformance.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if ! LD_LIBRARY_PATH="$nvidia" "$program" > "$dir/nvidia.txt" 2>&1; then
  echo "FAIL: the transcript does not run on NVIDIA's library:"; tail -5 "$dir/nvidia.txt"; exit 1
fi
if ! LD_LIBRARY_PATH="$simgpu" "$program" > "$dir/simgpu.txt" 2>&1; then
  echo "FAIL: the transcript does not run on simgpu's library:"; tail -5 "$dir/simgpu.txt"; exit 1
fi
if ! diff -u "$dir/nvidia.txt" "$dir/simgpu.txt"; then
  echo "FAIL: simgpu's transcript differs from NVIDIA's (lines prefixed - are NVIDIA's)"; exit 1
fi
echo "OK: $(wc -l < "$dir/nvidia.txt") transcript lines identical"
