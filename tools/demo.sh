#!/usr/bin/env bash
# The main job, end to end on a machine with no GPU:
#   1. build ttrace, simgpu and the tp_mlp workload;
#   2. run a 4-rank (tensor parallel 2 x data parallel 2) BF16 training run on simgpu under libttrace.so and
#      `ttrace check` it: clean;
#   3. run it again with one bit flipped in one GEMM output on one rank (simgpu's SIMGPU_FAULT) and check it:
#      the finding names that rank and that op's seq, and nothing else;
#   4. the differential check (TTrace): a one-rank reference run of the same program, then the parallel run with
#      a parallelization bug (a gradient scaled by the TP size twice). `ttrace check` calls the buggy run clean,
#      since every op computed what its own inputs imply; `ttrace diff` against the reference finds the first op
#      where the runs part.
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
run_job() {  # run_job NAME [FAULT [RANKS TP [tp_mlp flags...]]]
  local name=$1 fault=${2:-} n=${3:-$ranks} t=${4:-$tp}
  shift $(( $# < 4 ? $# : 4 ))
  rm -rf "${out:?}/$name"
  env LD_LIBRARY_PATH="$B/simgpu/lib" LD_PRELOAD="$B/lib/libttrace.so" TTRACE_DIR="$out/$name" \
      ${fault:+SIMGPU_FAULT="$fault"} \
      "$B/bin/simrun" -n "$n" -- "$B/bin/tp_mlp" --tp "$t" --steps "$steps" --dtype "$dtype" "$@"
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

ttrace_log "reference run: 1 rank, same seed and global batch"
run_job demo-reference "" 1 1 > "$out/demo-reference.log"
ttrace_log "parallel run with a bug: $ranks ranks (TP $tp), the TP-replicated gradient scaled by the TP size twice"
run_job demo-bug "" "$ranks" "$tp" --bug grad-scale-twice > "$out/demo-bug.log"
ttrace_log "ttrace check $out/demo-bug (each op is right for its own inputs)"
set +e
"$B/bin/ttrace" check "$out/demo-bug" > "$out/demo-bug-check.log"
bug_check_rc=$?
grep '^verdict' "$out/demo-bug-check.log"
ttrace_log "ttrace diff $out/demo-reference $out/demo-bug"
"$B/bin/ttrace" diff "$out/demo-reference" "$out/demo-bug" --json "$out/demo-bug-diff.json"
diff_rc=$?
set -e

echo
status=0
if [ $clean_rc = 0 ] && [ $fault_rc = 1 ] &&
   grep -q "\"rank\": *$fault_rank, *\"seq\": *$expect_seq," "$out/demo-fault.json"; then
  ttrace_log "demo OK: clean run clean; injected fault caught at (rank $fault_rank, seq $expect_seq)"
else
  ttrace_log "demo FAILED: clean exit $clean_rc (want 0), fault exit $fault_rc (want 1), expected (rank $fault_rank, seq $expect_seq)"
  ttrace_log "(exit 3 = incomplete: evidence missing, the report above says what; 2 = usage or data error)"
  status=1
fi
if [ $bug_check_rc = 0 ] && [ $diff_rc = 1 ] && ! grep -q '"first_divergence": null' "$out/demo-bug-diff.json"; then
  ttrace_log "demo OK: the parallelization bug passes ttrace check and ttrace diff localizes it (first divergence above)"
else
  ttrace_log "demo FAILED: buggy run check exit $bug_check_rc (want 0), diff exit $diff_rc (want 1 with a first divergence)"
  status=1
fi
exit $status
