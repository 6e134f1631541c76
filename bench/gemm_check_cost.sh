#!/usr/bin/env bash
# What the default GEMM check costs against reading the trace (issue 9's goal: "within a few times the cost of
# reading the trace"): writes one 4096^3 GEMM of each dtype with gemm_check_bench (BF16: the default replays it in
# FP32 slices; FP32: the default projects it), then runs `ttrace dump` (the read: frames, CRCs, zstd, payloads
# decoded) and `ttrace check` (the read plus the check) alternately RUNS times each, and prints per run the CPU
# seconds (user + sys), wall seconds and peak resident memory, then the best CPU of each and check / dump.
# CPU seconds, not wall: OpenBLAS runs on every core, and the CPU total is what other load on the machine disturbs
# least. Every check must print the same report (compared, and kept in $dir across runs so that binaries can be
# alternated: rm $dir/report-* to start afresh). The summary names the OpenBLAS kernels the check ran on (the
# report's gemm: line): OPENBLAS_CORETYPE in the environment chooses them, and this project's machines export
# OPENBLAS_CORETYPE=Haswell, so measure the default with `env -u OPENBLAS_CORETYPE` (docs/error-models.md).
#   Usage: bench/gemm_check_cost.sh [build dir] [RUNS (3)] [N (4096)]
# Idle, RUNS = 3 takes about a minute (plus writing the traces: ~30 s); the traces stay in $TTRACE_COST_DIR
# (default /tmp/ttrace-gemm-cost) for the next run.
set -euo pipefail
build="${1:-$(dirname "$0")/../build}"
runs="${2:-3}"
n="${3:-4096}"
ttrace="$build/bin/ttrace"
dir="${TTRACE_COST_DIR:-/tmp/ttrace-gemm-cost}"
mkdir -p "$dir"
for t in bf16 f32; do
  [[ -f "$dir/$t-$n/rank-0.ttr" ]] || "$build/bench/gemm_check_bench" write "$dir/$t-$n" "$n" "$n" "$n" "$t" >&2
done
measure() {  # label, command...: prints "label cpu wall peak_kib"
  local label=$1
  shift
  /usr/bin/time -f "$label %U %S %e %M" -o "$dir/time" "$@" >"$dir/out"
  awk '{printf "%s %.2f %.2f %d\n", $1, $2 + $3, $4, $5}' "$dir/time"
}
printf '%-10s %6s %6s %9s\n' run cpu_s wall_s peak_kib
for t in bf16 f32; do
  trace="$dir/$t-$n"
  best_dump="" best_check=""
  for r in $(seq "$runs"); do
    read -r _ cpu wall peak < <(measure dump "$ttrace" dump "$trace")
    printf '%-10s %6s %6s %9s\n' "$t-dump" "$cpu" "$wall" "$peak"
    best_dump=$(awk -v a="$cpu" -v b="${best_dump:-1e9}" 'BEGIN { print (a < b ? a : b) }')
    read -r _ cpu wall peak < <(measure check "$ttrace" check "$trace")
    printf '%-10s %6s %6s %9s\n' "$t-check" "$cpu" "$wall" "$peak"
    best_check=$(awk -v a="$cpu" -v b="${best_check:-1e9}" 'BEGIN { print (a < b ? a : b) }')
    # Compared without the kernels' name, which says how, not what, and which older binaries do not print.
    sed 's/, OpenBLAS kernels .*$//' "$dir/out" >"$dir/out-verdict"
    if [[ -f "$dir/report-$t-verdict" ]]; then
      cmp -s "$dir/out-verdict" "$dir/report-$t-verdict" || { echo "error: the $t report changed between runs" >&2; exit 1; }
    fi
    cp "$dir/out" "$dir/report-$t"
    cp "$dir/out-verdict" "$dir/report-$t-verdict"
  done
  kernels=$(sed -n 's/.*OpenBLAS kernels \(.*\)$/\1/p' "$dir/report-$t")
  awk -v t="$t" -v d="$best_dump" -v c="$best_check" -v k="$kernels" \
    'BEGIN { printf "%s %dx%dx%d: best dump %.2f s, best check %.2f s: check / dump %.1f (OpenBLAS kernels %s)\n", t, '"$n"', '"$n"', '"$n"', d, c, c / d, k }'
done
