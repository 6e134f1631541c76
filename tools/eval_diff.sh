#!/bin/bash
# Evaluates `ttrace diff` on the gpt workload (tools/workloads/gpt) on simgpu under libttrace.so: the world-size-1
# reference per dtype and its calibration run (--perturb, SIMGPU_ACCUM=random:11), clean runs of each layout
# under several SIMGPU_ACCUM orders, and each --bug where it can occur, each diffed against the reference without
# and with --calibrate. Prints one table per dtype (bug x layout, plain | calibrated: detected, first divergent op
# as "kind@REF_SEQ:api:operand", error / threshold and the threshold's model), then per dtype the largest clean
# error/threshold (the diff's tightness) and, per bug, how often it was detected and its smallest error/threshold.
#
#   tools/eval_diff.sh [BUILD_DIR]     (default build; needs ttrace, ttrace_shim, gpt, simrun and simgpu built)
# Environment: EVAL_LAYOUTS (default: the matrix TP in {1,2,4} x DP in {1,2} x SP in {off,on} x PP in {1,2}
# without the reference's own layout, each PP layout also under 1F1B, plus two with the distributed optimizer;
# names are tpN, dpN, ppN, sp for sequence parallelism, dist for the distributed optimizer, a suffix -1f1b for
# --schedule 1f1b; the reference runs GPipe), EVAL_BUGS (subset), EVAL_ORDERS (clean runs'
# SIMGPU_ACCUM orders, default "pairwise splitk:4 random:7"), EVAL_MICRO (micro-batches per step of every run,
# the reference's included, default 2), EVAL_ARGS (extra gpt flags; "--clip-grad 0": gpt without gradient clipping, as
# it was before it clipped by default), EVAL_KEEP=1 keeps the traces (their
# directory is printed).
set -u
build=$(cd "${1:-build}" && pwd) || exit 2
for f in "$build/bin/gpt" "$build/bin/simrun" "$build/bin/ttrace" "$build/lib/libttrace.so" \
         "$build/simgpu/lib/libnccl.so.2"; do
  [ -e "$f" ] || { echo "eval_diff: $f missing; build ttrace ttrace_shim gpt simrun and simgpu" >&2; exit 2; }
done
work=$(mktemp -d /tmp/eval_diff.XXXXXX)
if [ "${EVAL_KEEP:-0}" = 1 ]; then echo "traces in $work"; else trap 'rm -rf "$work"' EXIT; fi
bugs=${EVAL_BUGS:-"sp-layernorm-grad-not-reduced replicated-weight-unsynced grad-scaled-twice loss-not-scaled-by-dp
  allgather-wrong-order column-split-wrong-dim rowparallel-reduce-max grad-allreduce-on-tp-comm
  optimizer-before-reduce embedding-grad-race causal-mask-shifted pp-stale-microbatch"}
matrix=""
for tp in 1 2 4; do
  for dp in 1 2; do
    for sp in "" sp; do
      for pp in 1 2; do
        [ "$tp" = 1 ] && { [ -n "$sp" ] || [ "$dp$pp" = 11 ]; } && continue
        l="tp$tp"
        [ "$dp" = 2 ] && l+="dp2"
        [ "$pp" = 2 ] && l+="pp2"
        matrix+=" $l$sp"
        [ "$pp" = 2 ] && matrix+=" $l$sp-1f1b"
      done
    done
  done
done
layouts=${EVAL_LAYOUTS:-"$matrix dp2dist tp2dp2spdist"}
orders=${EVAL_ORDERS:-"pairwise splitk:4 random:7"}
extra="--microbatches ${EVAL_MICRO:-2} ${EVAL_ARGS:-}"

# trace NAME WORLD ACCUM ARGS...: runs gpt under the shim into $work/NAME; prints "inactive" when the bug has no
# effect in this layout, "FAIL" when the run failed.
trace() {
  local name=$1 world=$2 accum=$3 out
  shift 3
  rm -rf "$work/$name"
  out=$(env LD_LIBRARY_PATH="$build/simgpu/lib" TTRACE_DIR="$work/$name" LD_PRELOAD="$build/lib/libttrace.so" \
        SIMGPU_DEVICES=$((world > 8 ? world : 8)) ${accum:+SIMGPU_ACCUM=$accum} \
        "$build/bin/simrun" -n "$world" -- "$build/bin/gpt" $extra "$@" \
        --rdzv "$work/$name.rdzv" 2>&1) || { echo FAIL; echo "$out" >"$work/$name.log"; return; }
  grep -q "inactive in this layout" <<<"$out" && echo inactive
}

# cell REF CAND [CLEAN]: one table cell from `ttrace diff REF CAND [--calibrate CLEAN] --json`:
# "VERDICT MAX_RATIO nc=NOT_CHECKED" or "FOUND kind@ref_seq:api:operand RATIO model".
cell() {
  local j="$2.json${3:+.cal}"
  "$build/bin/ttrace" diff "$1" "$2" ${3:+--calibrate "$3"} --json "$j" >"$j.txt" 2>&1
  python3 - "$j" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print("ERROR"); sys.exit()
d, t = j.get("first_divergence"), j["summary"].get("tightness") or {}
nc = j["summary"].get("not_checked_total", 0)
if j["verdict"] == "findings" and d:
    print("FOUND %s@%d:%s:%s %.3g %s" % (d["kind"], d["ref_seq"], d["api"].replace("cublas", "").replace("nccl", ""),
                                         d["operand"].split()[0],
                                         d["ratio"] if d["ratio"] is not None else float("inf"),
                                         d["model"]))
else:
    import re
    cal = re.search(r"calibration: .* largest err/threshold (\S+)", open(sys.argv[1] + ".txt").read())
    print("%s %.3g nc=%d%s" % (j["verdict"], t.get("max_ratio", 0) or 0, nc, " cal=" + cal.group(1) if cal else ""))
PY
}

start=$SECONDS
for dtype in fp32 bf16; do
  r=$(trace "ref-$dtype" 1 "" --dtype "$dtype")
  [ "$r" = FAIL ] && { echo "eval_diff: the $dtype reference run failed ($work/ref-$dtype.log)" >&2; exit 1; }
  r=$(trace "cal-$dtype" 1 random:11 --dtype "$dtype" --perturb 5)
  [ "$r" = FAIL ] && { echo "eval_diff: the $dtype calibration run failed ($work/cal-$dtype.log)" >&2; exit 1; }
done
printf '\n== gpt under the shim against the 1-rank reference (ttrace diff) ==\n'
printf '%-30s %-14s %-5s %-58s | %s\n' case layout dtype "plain (FOUND kind@ref_seq:api:operand err/thr model)" \
  "--calibrate (or: verdict max err/bound cal=max calibrated err/thr)"
# row CASE LAYOUT DTYPE NAME CALIBRATE: diffs $work/NAME, prints the row and adds it to the summary.
row() {
  local c cc="-"
  c=$(cell "$work/ref-$3" "$work/$4")
  [ "$5" = 1 ] && cc=$(cell "$work/ref-$3" "$work/$4" "$work/cal-$3")
  printf '%-30s %-14s %-5s %-58s | %s\n' "$1" "$2" "$3" "$c" "$cc"
  echo "${1%% *} $3 $c" >>"$work/summary"
  [ "$5" = 1 ] && echo "${1%% *} $3+cal $cc" >>"$work/summary"
}
for l in $layouts; do
  tp=1 dp=1 pp=1
  [[ $l =~ tp([0-9]+) ]] && tp=${BASH_REMATCH[1]}
  [[ $l =~ dp([0-9]+) ]] && dp=${BASH_REMATCH[1]}
  [[ $l =~ pp([0-9]+) ]] && pp=${BASH_REMATCH[1]}
  world=$((tp * dp * pp))
  for dtype in fp32 bf16; do
    args=(--tp "$tp" --dp "$dp" --pp "$pp" --dtype "$dtype")
    [[ $l =~ sp($|dist|-) ]] && args+=(--sp)
    [[ $l == *-1f1b ]] && args+=(--schedule 1f1b)
    [[ $l == *dist* ]] && args+=(--dist-opt)
    for o in $orders; do
      name="clean-$dtype-$l-${o/:/_}"
      r=$(trace "$name" "$world" "$o" "${args[@]}")
      [ "$r" = FAIL ] && { printf '%-30s %-14s %-5s FAIL\n' "clean $o" "$l" "$dtype"; continue; }
      row "clean $o" "$l" "$dtype" "$name" 1
    done
    for b in $bugs; do
      name="bug-$dtype-$l-$b"
      r=$(trace "$name" "$world" random:3 "${args[@]}" --bug "$b")
      [ "$r" = inactive ] && continue
      [ "$r" = FAIL ] && { printf '%-30s %-14s %-5s FAIL\n' "$b" "$l" "$dtype"; continue; }
      # FP32 bugs are all found without calibration (docs/diff.md); their calibrated diff is skipped for time.
      row "$b" "$l" "$dtype" "$name" $([ "$dtype" = bf16 ] && echo 1 || echo 0)
    done
  done
done
echo
awk '{ k = $1 " " $2 }
     $1 == "clean" { n[k]++; if ($3 == "clean") ok[k]++; v = ($3 == "FOUND") ? $5 : $4
                     if (v + 0 > mx[k]) mx[k] = v + 0
                     if ($6 ~ /^cal=/ && substr($6, 5) + 0 > mc[k]) mc[k] = substr($6, 5) + 0 }
     $1 != "clean" { m[k]++; if ($3 == "FOUND") { f[k]++; if (!(k in mn) || $5 + 0 < mn[k]) mn[k] = $5 + 0 } }
     END { for (k in n) printf "%-40s %d/%d clean, largest clean err/bound %.3g%s\n", k, ok[k], n[k], mx[k],
                               (k in mc) ? sprintf(", largest calibrated err/threshold %.3g", mc[k]) : "";
           for (k in m) printf "%-40s detected %d/%d, smallest err/threshold %s\n", k, f[k], m[k],
                               (k in mn) ? sprintf("%.3g", mn[k]) : "-" }' "$work/summary" | sort
echo "run time $((SECONDS - start)) s"
