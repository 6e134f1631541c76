#!/usr/bin/env bash
# What one intercepted call costs: shim_call_bench without the shim ("direct"), with it disabled
# (TTRACE_DISABLE=1), with the calls filtered out (TTRACE_OPS=nccl), in meta mode and in full mode, with 1, 2 and 4
# threads each calling on its own handle and stream; against simgpu's cuBLAS (a real 2x2 GEMM enqueued on a stream
# worker) and against a null cuBLAS (bench/null_cublas.cc: the call itself costs ~2 ns, so the difference is the
# shim's own cost). Columns:
# ns_per_call (wall, slowest thread), thread_cpu_ns (the calling threads' own CPU time: what the shim adds on the
# calling thread, robust to other load on the machine), process_cpu_ns (all threads, drain included, per call).
# Run by hand after a build; the numbers go in issue notes.   Usage: bench/shim_call_bench.sh [build dir]
set -euo pipefail
build="${1:-$(dirname "$0")/../build}"
bench="$build/bench/shim_call_bench"
shim="$build/lib/libttrace.so"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
run() {  # label, calls per thread, threads, env...
  local label=$1 calls=$2 threads=$3
  shift 3
  printf '%-9s %s\n' "$label" "$(env "$@" "$bench" --threads "$threads" --calls "$calls" --reps 5)"
}
for vendor in simgpu null; do
  if [[ $vendor == null ]]; then
    libs="$build/bench/null_cublas:$build/simgpu/lib" calls=400000
  else
    libs="$build/simgpu/lib" calls=20000
  fi
  echo "== cuBLAS: $vendor"
  for threads in 1 2 4; do
    per=$((calls / threads))
    run direct $per $threads LD_LIBRARY_PATH="$libs"
    run disabled $per $threads LD_LIBRARY_PATH="$libs" LD_PRELOAD="$shim" TTRACE_DISABLE=1
    run filtered $per $threads LD_LIBRARY_PATH="$libs" LD_PRELOAD="$shim" TTRACE_OPS=nccl \
      TTRACE_DIR="$out/$vendor-filtered-$threads"
    for mode in meta full; do
      run $mode $per $threads LD_LIBRARY_PATH="$libs" LD_PRELOAD="$shim" TTRACE_MODE=$mode \
        TTRACE_DIR="$out/$vendor-$mode-$threads"
      rm -rf "$out/$vendor-$mode-$threads"
    done
  done
done
