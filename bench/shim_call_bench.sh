#!/usr/bin/env bash
# The calling thread's cost of one intercepted call: shim_call_bench without the shim, with it disabled
# (TTRACE_DISABLE=1), in meta mode and in full mode, on simgpu, with 1 and 4 threads. Run by hand after a build;
# the numbers go in issue notes.   Usage: bench/shim_call_bench.sh [build dir]
set -euo pipefail
build="${1:-$(dirname "$0")/../build}"
bench="$build/bench/shim_call_bench"
shim="$build/lib/libttrace.so"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export LD_LIBRARY_PATH="$build/simgpu/lib"
for threads in 1 4; do
  calls=$((20000 / threads))
  printf '%-10s %s\n' "direct" "$("$bench" --threads $threads --calls $calls)"
  printf '%-10s %s\n' "disabled" "$(LD_PRELOAD="$shim" TTRACE_DISABLE=1 "$bench" --threads $threads --calls $calls)"
  for mode in meta full; do
    printf '%-10s %s\n' "$mode" "$(LD_PRELOAD="$shim" TTRACE_MODE=$mode TTRACE_DIR="$out/$mode-$threads" \
      "$bench" --threads $threads --calls $calls)"
  done
done
