#!/bin/bash
# Runs the gpt workload on simgpu in every layout of TP ∈ {1,2,4} × DP ∈ {1,2} (plain and --dist-opt) × SP ∈
# {off,on} × PP ∈ {1,2} that fits in 8 ranks (SP needs TP > 1), FP32 and BF16, clean and with each --bug where it
# can occur, and prints one table per dtype: the checkpoint's relative difference from the world-size-1 reference
# (max over tensors of ‖Δ‖/‖ref‖, weights and Adam moments; "-": the bug cannot occur in that layout), then per
# dtype the largest clean difference and the smallest difference each bug reaches in a layout where it applies.
#
#   tools/gpt_matrix.sh [BUILD_DIR]      (default build; needs the gpt, simrun and simgpu targets built)
# Environment: GPT_MATRIX_ARGS (extra gpt flags, e.g. "--steps 5"), GPT_MATRIX_BUGS (space-separated subset).
set -u
build=$(cd "${1:-build}" && pwd) || exit 2
for f in "$build/bin/gpt" "$build/bin/simrun" "$build/simgpu/lib/libnccl.so.2"; do
  [ -e "$f" ] || { echo "gpt_matrix: $f missing; build gpt simrun simgpu_cudart simgpu_cublas simgpu_nccl" >&2; exit 2; }
done
work=$(mktemp -d /tmp/gpt_matrix.XXXXXX)
trap 'rm -rf "$work"' EXIT
bugs=${GPT_MATRIX_BUGS:-"sp-layernorm-grad-not-reduced replicated-weight-unsynced grad-scaled-twice
  loss-not-scaled-by-dp allgather-wrong-order column-split-wrong-dim rowparallel-reduce-max grad-allreduce-on-tp-comm
  optimizer-before-reduce embedding-grad-race causal-mask-shifted pp-stale-microbatch"}
extra=${GPT_MATRIX_ARGS:-}

# run NAME WORLD ARGS...: prints the checkpoint's relative difference, "-" when the bug is inactive, "FAIL" when
# the run failed.
run() {
  local name=$1 world=$2 out
  shift 2
  out=$(LD_LIBRARY_PATH="$build/simgpu/lib" "$build/bin/simrun" -n "$world" -- "$build/bin/gpt" $extra "$@" \
        --rdzv "$work/$name.rdzv" --dump-weights "$work/$name.ck" 2>&1) || { echo FAIL; echo "$out" >"$work/$name.log"; return; }
  if grep -q "inactive in this layout" <<<"$out"; then echo -; return; fi
  sed -n 's/^compare weights_rel=\([^ ]*\) .* state_rel=\([^ ]*\) .*/\1 \2/p' <<<"$out" |
    awk '{ printf "%.2e\n", ($1 > $2 ? $1 : $2) }'
}

layouts=()
for tp in 1 2 4; do for dp in 1 2; do for pp in 1 2; do for sp in 0 1; do for dist in 0 1; do
  ((tp * dp * pp <= 8)) || continue
  ((sp == 0 || tp > 1)) || continue
  ((dist == 0 || dp > 1)) || continue
  ((tp * dp * pp > 1)) || continue
  layouts+=("$tp $dp $pp $sp $dist")
done; done; done; done; done

start=$SECONDS
for dtype in fp32 bf16; do
  ref="$work/ref-$dtype.ck"
  LD_LIBRARY_PATH="$build/simgpu/lib" "$build/bin/simrun" -n 1 -- "$build/bin/gpt" $extra --dtype "$dtype" \
    --rdzv "$work/ref.rdzv" --dump-weights "$ref" >/dev/null || { echo "gpt_matrix: reference run failed" >&2; exit 1; }
  printf '\n%s: relative difference of the final checkpoint from the 1-rank reference\n' "$dtype"
  printf '%-22s %9s' layout clean
  i=0
  for b in $bugs; do i=$((i + 1)); printf ' %9s' "bug$i"; done
  echo
  for l in "${layouts[@]}"; do
    read -r tp dp pp sp dist <<<"$l"
    args=(--tp "$tp" --dp "$dp" --pp "$pp" --microbatches 2 --dtype "$dtype" --reference "$ref")
    label="tp$tp dp$dp pp$pp"
    ((sp)) && args+=(--sp) && label+=" sp"
    ((dist)) && args+=(--dist-opt) && label+=" dist"
    world=$((tp * dp * pp))
    clean=$(run clean "$world" "${args[@]}")
    printf '%-22s %9s' "$label" "$clean"
    echo "clean $dtype $clean" >>"$work/summary"
    for b in $bugs; do
      v=$(run "bug" "$world" "${args[@]}" --bug "$b")
      printf ' %9s' "$v"
      echo "$b $dtype $v" >>"$work/summary"
    done
    echo
  done
done
echo
i=0
for b in $bugs; do i=$((i + 1)); echo "bug$i = $b"; done
echo
awk '$3 != "-" { if ($3 == "FAIL") fail[$1 " " $2] = 1; else {
       k = $1 " " $2; if ($1 == "clean") { if (!(k in mx) || $3 + 0 > mx[k]) mx[k] = $3 + 0 }
       else { if (!(k in mn) || $3 + 0 < mn[k]) mn[k] = $3 + 0; if (!(k in bmx) || $3 + 0 > bmx[k]) bmx[k] = $3 + 0 } } }
     END { for (k in mx) printf "%-40s largest clean difference %.2e\n", k, mx[k];
           for (k in mn) printf "%-40s smallest %.2e, largest %.2e\n", k, mn[k], bmx[k];
           for (k in fail) printf "%-40s FAILED in some layout\n", k }' "$work/summary" | sort
echo "run time $((SECONDS - start)) s"
