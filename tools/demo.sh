#!/usr/bin/env bash
# The main job, end to end on a machine with no GPU:
#   1. build ttrace, simgpu and the tp_mlp workload;
#   2. run a 4-rank (tensor parallel 2 x data parallel 2) BF16 training run on simgpu under libttrace.so and
#      `ttrace check` it: clean;
#   3. run it again with one bit flipped in one GEMM output on one rank (simgpu's SIMGPU_FAULT) and check it:
#      the finding names that rank and that op's seq, and nothing else.
# Usage: tools/demo.sh [--ranks N] [--tp N] [--steps N] [--dtype bf16|fp32]
set -euo pipefail
source "$(dirname "$0")/lib/setup.sh"

ranks=4 tp=2 steps=2 dtype=bf16
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --tp) tp=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    *) echo "usage: tools/demo.sh [--ranks N] [--tp N] [--steps N] [--dtype bf16|fp32]" >&2; exit 2 ;;
  esac
done

ttrace_setup
ttrace_build ttrace simrun tp_mlp ttrace_shim

B="$TTRACE_BUILD_DIR"
out="$TTRACE_ROOT/ttrace-out"
mkdir -p "$out"
run_job() {  # run_job NAME [FAULT]
  local name=$1 fault=${2:-}
  rm -rf "${out:?}/$name"
  env LD_LIBRARY_PATH="$B/simgpu/lib" LD_PRELOAD="$B/lib/libttrace.so" TTRACE_DIR="$out/$name" \
      ${fault:+SIMGPU_FAULT="$fault"} \
      "$B/bin/simrun" -n "$ranks" -- "$B/bin/tp_mlp" --tp "$tp" --steps "$steps" --dtype "$dtype"
}

ttrace_log "clean run: $ranks ranks (TP $tp x DP $((ranks / tp))), $dtype, $steps steps, under libttrace.so"
run_job demo-clean | tee "$out/demo-clean.log"
ls -l "$out/demo-clean"
ttrace_log "ttrace check $out/demo-clean"
set +e
"$B/bin/ttrace" check "$out/demo-clean" --json "$out/demo-clean.json"
clean_rc=$?
set -e

# The fault: one bit of one element of rank 1's third GEMM call (dW2 of step 0, a weight gradient): an exponent
# bit of its storage (bit 27 of FP32, bit 13 of BF16), the kind of flip a failing GPU makes.
fault_rank=1 fault_call=2
bit=27
[ "$dtype" = bf16 ] && bit=13
fault="gemm:rank=$fault_rank:call=$fault_call:elem=5:bit=$bit"
expect_seq=$("$B/bin/ttrace" dump "$out/demo-clean/rank-$fault_rank.ttr" | awk '$2 ~ /^cublas/ {print $1}' |
             sed -n "$((fault_call + 1))p" | sed 's/seq=//')
ttrace_log "faulty run: SIMGPU_FAULT=$fault (rank $fault_rank, GEMM call $fault_call = seq $expect_seq)"
run_job demo-fault "$fault" | tee "$out/demo-fault.log"
if ! diff -q <(grep '^rank' "$out/demo-clean.log" | sort) <(grep '^rank' "$out/demo-fault.log" | sort) >/dev/null; then
  ttrace_log "the flip silently changed the trained weights (no crash, no error from any library):"
  diff <(grep '^rank' "$out/demo-clean.log" | sort) <(grep '^rank' "$out/demo-fault.log" | sort) || true
fi
ttrace_log "ttrace check $out/demo-fault"
set +e
"$B/bin/ttrace" check "$out/demo-fault" --json "$out/demo-fault.json"
fault_rc=$?
set -e

echo
if [ $clean_rc = 0 ] && [ $fault_rc = 1 ] &&
   grep -q "\"rank\": *$fault_rank, *\"seq\": *$expect_seq," "$out/demo-fault.json"; then
  ttrace_log "demo OK: clean run clean; injected fault caught at (rank $fault_rank, seq $expect_seq)"
else
  ttrace_log "demo FAILED: clean exit $clean_rc (want 0), fault exit $fault_rc (want 1), expected (rank $fault_rank, seq $expect_seq)"
  ttrace_log "(exit 3 = incomplete: evidence missing, the report above says what; 2 = usage or data error)"
  exit 1
fi
