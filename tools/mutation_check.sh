#!/usr/bin/env bash
# tools/mutation_check.sh [NAME_REGEX]: do the tests fail when the code is wrong?
#
# Applies each plausible bug of the list below to a scratch copy of this tree (the tracked and untracked,
# non-ignored files, copied to $TTRACE_MUTATION_DIR, default /tmp/ttrace-mutation/src, with its own build/ kept
# between runs so that only what a mutation changes is rebuilt; ccache helps), one at a time: it builds the
# mutation's targets, runs its tests (ctest -R, stopping at the first failure: the count is of the tests that
# failed before it stopped), restores the file, and prints a table: mutation -> tests that failed. Every mutation
# must be caught: the script exits 1 when one survives, 2 when an anchor is not found exactly once (the list
# is stale: fix the anchor) or a mutation does not build.
#
# A mutation is one exact search/replace in one file, named by its base name (with its folder only where the base
# name is not unique) and found anywhere in the tree, so the list survives files moving between folders. Not part of CI (it takes tens of minutes on 2 cores); run it
# before resolving an issue that touches the code it mutates, and add a line when you add a check.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="${TTRACE_MUTATION_DIR:-/tmp/ttrace-mutation}"
src="$scratch/src"
build="$src/build"
jobs="${JOBS:-2}"
# ccache keys on paths relative to its base dir: with the scratch's parent as base, the scratch tree hashes like any
# checkout whose build/ sits in its root, so its first build reuses their cache.
export CCACHE_BASEDIR="$scratch"
only="${1:-}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Copies changed files only (a fresh mtime makes ninja rebuild them; unchanged files keep theirs).
sync_tree() {
  mkdir -p "$src"
  (cd "$root" && git ls-files -co --exclude-standard) | while IFS= read -r f; do
    [ -f "$root/$f" ] || continue
    if ! cmp -s "$root/$f" "$src/$f"; then
      mkdir -p "$(dirname "$src/$f")"
      cp "$root/$f" "$src/$f"
    fi
  done
}

configure() {
  [ -f "$build/build.ninja" ] && return
  log "configuring $build"
  cmake -S "$src" -B "$build" -G Ninja -DTTRACE_CUDA_ROOT="${TTRACE_CUDA_ROOT:-/usr/local/cuda}" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
}

# The one file of the scratch tree whose path ends in NAME (a base name, or a/b.cc where the base name is not unique),
# or a message and exit 2.
locate() {
  local hits
  hits=$(cd "$src" && git -C "$root" ls-files -co --exclude-standard | grep -E "(^|/)$1\$" || true)
  if [ "$(printf '%s\n' "$hits" | grep -c .)" != 1 ]; then
    echo "error: mutation file $1 matches '${hits:-nothing}' in the tree; update the list" >&2
    exit 2
  fi
  printf '%s/%s\n' "$src" "$hits"
}

# Replaces the one occurrence of $2 in file $1 by $3; exit 2 when it occurs other than once.
apply() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
n = text.count(old)
if n != 1:
    sys.exit(f"error: anchor found {n} times in {path} (expected once); update the list:\n{old}")
open(path, "w").write(text.replace(old, new))
EOF
}

names=() results=() failed_any=0 survived=0
# mutate NAME FILE SEARCH REPLACE TARGETS TEST_REGEX
mutate() {
  local name=$1 file=$2 old=$3 new=$4 targets=$5 tests=$6
  [ -n "$only" ] && ! [[ $name =~ $only ]] && return
  local path
  path=$(locate "$file")
  cp "$path" "$scratch/original"
  apply "$path" "$old" "$new" || exit 2
  log "$name: building $targets"
  # shellcheck disable=SC2086
  if ! ninja -C "$build" -j "$jobs" $targets >"$scratch/build.log" 2>&1; then
    cp "$scratch/original" "$path"
    tail -20 "$scratch/build.log" >&2
    echo "error: mutation '$name' does not build; fix the list" >&2
    exit 2
  fi
  log "$name: running tests matching $tests"
  local out caught
  # --stop-on-failure: one failing test catches the mutation; a mutation that makes a test hang costs one timeout,
  # not one for each test that would hang after it.
  out=$(cd "$build" && ctest -j "$jobs" --timeout 600 --stop-on-failure -R "$tests" 2>&1 || true)
  cp "$scratch/original" "$path"
  # "  12 - Suite.Test (Failed)" or, for parameterized tests, "  12 - Suite.Test/p  # GetParam() = 0 (Failed)".
  local failed
  failed=$(printf '%s\n' "$out" | sed -n '/The following tests FAILED/,$p' |
    sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p')
  caught=$(printf '%s\n' "$failed" | grep -c . || true)
  if [ "$caught" = 0 ]; then
    caught=""
  else
    caught="$caught: $(printf '%s\n' "$failed" | head -3 | tr '\n' ' ')$([ "$caught" -gt 3 ] && echo "..." || true)"
  fi
  if ! grep -q "tests passed" <<<"$out"; then
    echo "error: ctest ran nothing for '$name' (regex $tests):" >&2
    printf '%s\n' "$out" | tail -5 >&2
    exit 2
  fi
  [ -z "$caught" ] && { caught="SURVIVED"; survived=$((survived + 1)); }
  log "$name: $caught"
  names+=("$name")
  results+=("$caught")
}

start=$(date +%s)
log "syncing $root to $src"
sync_tree
configure
log "building the unmutated tree"
ninja -C "$build" -j "$jobs" >"$scratch/build.log" 2>&1 || { tail -20 "$scratch/build.log"; exit 2; }

# ---- the list -----------------------------------------------------------------------------------------------
# Error bounds, 2x looser and 2x tighter.
mutate "gemm bound x2" error_model.cc "  return bound * kEvalSafety;" "  return 2 * bound * kEvalSafety;" \
  "gemm_bound_test gemm_check_test" "GemmBound|GemmCheck"
mutate "gemm bound x0.5" error_model.cc "  return bound * kEvalSafety;" "  return 0.5 * bound * kEvalSafety;" \
  "gemm_bound_test gemm_check_test" "GemmBound|GemmCheck"
mutate "reduce bound x2" error_model.cc "  return b * kEvalSafety;" "  return 2 * b * kEvalSafety;" \
  "error_model_test collective_check_test" "ReduceBound|CollectiveCheck"
mutate "reduce bound x0.5" error_model.cc "  return b * kEvalSafety;" "  return 0.5 * b * kEvalSafety;" \
  "error_model_test collective_check_test" "ReduceBound|CollectiveCheck"
mutate "ltmatmul output bound x2" lt_check.cc "    return (grow * std::fabs(scale)" \
  "    return 2 * (grow * std::fabs(scale)" "lt_check_test" "LtCheck"
mutate "ltmatmul output bound x0.5" lt_check.cc "    return (grow * std::fabs(scale)" \
  "    return 0.5 * (grow * std::fabs(scale)" "lt_check_test" "LtCheck"
# Analyzer checks.
mutate "conv bound with k doubled" conv_check.cc \
  "const GemmBound bound(precision, ConvTermsPerOutput(p), p.alpha, p.beta);" \
  "const GemmBound bound(precision, 2 * ConvTermsPerOutput(p), p.alpha, p.beta);" "conv_check_test" "ConvCheck"
mutate "gemm: last batch skipped" analyzer/gemm_check.cc $'for (int64_t bt = 0; bt < p.batch; ++bt) {\n    if (shared' \
  $'for (int64_t bt = 0; bt < std::max<int64_t>(1, p.batch - 1); ++bt) {\n    if (shared' "gemm_check_test" "GemmCheck"
mutate "gemm: |A|·|B| replaced by A·B" analyzer/gemm_check.cc \
  "MatMul(v.ta, v.tb, rows, cols, k, v.abs_a.data() + a_row, v.lda, v.abs_b.data() + b_col, v.ldb, mag->data(), rows);" \
  "MatMul(v.ta, v.tb, rows, cols, k, v.a + a_row, v.lda, v.b + b_col, v.ldb, mag->data(), rows);" "gemm_check_test" \
  "GemmCheck"
mutate "gemm projection bound x2" error_model.cc "  return (e_acc + p_.u_out * s.abs_out + s.count * p_.eta_out) * kEvalSafety;" \
  "  return 2 * (e_acc + p_.u_out * s.abs_out + s.count * p_.eta_out) * kEvalSafety;" "gemm_projection_test" \
  "GemmProjection"
mutate "gemm projection bound x0.5" error_model.cc \
  "  return (e_acc + p_.u_out * s.abs_out + s.count * p_.eta_out) * kEvalSafety;" \
  "  return 0.5 * (e_acc + p_.u_out * s.abs_out + s.count * p_.eta_out) * kEvalSafety;" "gemm_projection_test" \
  "GemmProjection"
mutate "gemm projection: flagged rows and columns not replayed" analyzer/gemm_check.cc \
  "for (size_t c = 0; c < cand.size() && c < cap; ++c) picked->push_back(cand[c].second);" \
  "(void)cap;" "gemm_projection_test" "GemmProjection"
mutate "gemm projection: non-finite rows counted as proven" analyzer/gemm_check.cc \
  "      picked->push_back(static_cast<int64_t>(o));
    } else if (r > 1) {" "      ++*proven;
      picked->push_back(static_cast<int64_t>(o));
    } else if (r > 1) {" "gemm_projection_test" "GemmProjection"
mutate "gemm projection: sample gathers op(A) as if untransposed" analyzer/gemm_check.cc \
  "      if (v.ta) {  // a row of op(A) is a stored column" "      if (false) {  // a row of op(A) is a stored column" \
  "gemm_projection_test" "GemmProjection"
mutate "gemm projection: every panel of a decoded operand read from its first column" analyzer/gemm_check.cc \
  "      d = s.F64() + c0 * rows;" "      d = s.F64();" "gemm_projection_test" "GemmProjection"
mutate "gemm projection: every panel of a captured operand decoded from its first column" analyzer/gemm_check.cc \
  "      s.Decode(static_cast<uint64_t>(c0 * rows), 1, count, buf.data());" "      s.Decode(0, 1, count, buf.data());" \
  "gemm_projection_test" "GemmProjection"
mutate "gemm kernels: OPENBLAS_CORETYPE's choice not said" blas.cc \
  '  if (getenv("OPENBLAS_CORETYPE") != nullptr) name += " (OPENBLAS_CORETYPE)";' '' \
  "ttrace verdict_test" "VerdictTest.GemmLineNamesTheBlasKernels"
mutate "gemm kernels: JSON leaves blas_core empty" json.cc \
  'Str("blas_core", s.blas_core)' 'Str("blas_core", std::string())' \
  "ttrace verdict_test" "VerdictTest.GemmLineNamesTheBlasKernels"
mutate "gemm fp32 slices: the reference's error dropped from the pass test" analyzer/gemm_check.cc \
  "std::isfinite(r) && (d + e) * (1 + kMargin) <= lo;" "std::isfinite(r) && d * (1 + kMargin) <= lo;" \
  "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: pass test against twice the bound" analyzer/gemm_check.cc \
  "    const double lo = aff.At(" "    const double lo = 2 * aff.At(" "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: reported bound of decided elements x2" analyzer/gemm_check.cc \
  "            const double b = aff.At(pb.at, s.row_a[i] + s.col_b[j], z, std::fabs(r));" \
  "            const double b = 2 * aff.At(pb.at, s.row_a[i] + s.col_b[j], z, std::fabs(r));" \
  "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: P's lower end from the slices' |partial sums| doubled" analyzer/gemm_check.cc \
  "        double lo = std::max(0.0, (abs_sl[x] - eta_g) * acc_lo - eta_p) * sl_lo;" \
  "        double lo = 2 * std::max(0.0, (abs_sl[x] - eta_g) * acc_lo - eta_p) * sl_lo;" "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: P's upper end (Cauchy-Schwarz, max x sum) halved" analyzer/gemm_check.cc \
  "                              s.row_max[i] * s.col_b[j]}) * up;" \
  "                              s.row_max[i] * s.col_b[j]}) * up * 0.5;" "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: P never computed where its bounds leave too many elements undecided" analyzer/gemm_check.cc \
  "if (have_p32 || undecided.size() * 32 <= count || o.fp32_p == Fp32P::kNever) break;" \
  "if (have_p32 || undecided.size() * 32 <= count || o.fp32_p != Fp32P::kAlways) break;" "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: a panel of B's column sums written at column 0" analyzer/gemm_check.cc \
  "o->col_b.data() + j0, o->col_norm_b.data() + j0, o->col_max.data() + j0);" \
  "o->col_b.data(), o->col_norm_b.data(), o->col_max.data());" "gemm_slices_test" "GemmSlices"
mutate "bf16 slices: values that are not BF16 numbers packed (truncated)" bf16_slices.cc \
  "    if ((low_bits & 0x0000ffff0000ffffu) != 0) return false;" "    if (false) return false;" \
  "bf16_slices_test gemm_slices_test" "Bf16Slices|GemmSlices"
mutate "bf16 slices: a slice of odd length loses its last term" bf16_slices.cc \
  "          w[r] = even >> 16;" "          w[r] = 0;" "bf16_slices_test gemm_slices_test" "Bf16Slices|GemmSlices"
mutate "bf16 slices: a slice's |sum| taken without its sign cleared" bf16_slices.cc \
  "const __m512 alo = _mm512_and_ps(lo[j], no_sign), ahi" "const __m512 alo = lo[j], ahi" \
  "bf16_slices_test gemm_slices_test" "Bf16Slices|GemmSlices"
mutate "gemm fp32 slices: the vdpbf16ps kernel never chosen" analyzer/gemm_check.cc \
  "const bool try_dot = o.slice_kernel != SliceKernel::kSgemm && Bf16DotAvailable();" "const bool try_dot = false;" \
  "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: a panel of B that is not BF16 run on the kernel anyway" analyzer/gemm_check.cc \
  "dot = dot_a && PackBf16(s.bc.data(), cols, k, k, ks, kBf16ColBlock, &packed_b);" \
  "dot = dot_a && (PackBf16(s.bc.data(), cols, k, k, ks, kBf16ColBlock, &packed_b) || true);" "gemm_slices_test" \
  "GemmSlices"
mutate "gemm fp32 slices: captured op(A) packed with its transpose's steps" analyzer/gemm_check.cc \
  "PackBf16Stored(v.a.op.data, v.a.base, m, k, v.ta ? k : 1, v.ta ? 1 : m," \
  "PackBf16Stored(v.a.op.data, v.a.base, m, k, v.ta ? 1 : k, v.ta ? m : 1," "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: a captured panel of B's packed sums written at column 0" analyzer/gemm_check.cc \
  "PackedSums(packed_b, kBf16ColBlock, s.col_b.data() + j0, s.col_norm_b.data() + j0," \
  "PackedSums(packed_b, kBf16ColBlock, s.col_b.data(), s.col_norm_b.data()," "gemm_slices_test" "GemmSlices"
mutate "gemm fp32 slices: merged stats keep the later worst element on a tie" element_stats.cc \
  "(o.worst_ratio == worst_ratio && o.worst_index < worst_index)" \
  "(o.worst_ratio == worst_ratio && o.worst_index > worst_index)" "error_model_test" "ElementStats"
mutate "gemm fp32 slices: merged stats keep the later first violation" element_stats.cc \
  "(!has_violation || o.first_index < first_index)" "(!has_violation || o.first_index > first_index)" \
  "error_model_test" "ElementStats"
mutate "streaming: ops over the memory limit checked anyway" check.cc \
  "batch.push_back(Item{t.rank(), &op, OpBytes(op), cost > limit});" \
  "batch.push_back(Item{t.rank(), &op, OpBytes(op), false});" "verdict_test" "BudgetTest"
mutate "gemm probabilistic bound x2" error_model.cc "    theta_acc_ = std::min(theta_acc_, gt);" \
  "    theta_acc_ = std::min(theta_acc_, 2 * gt);" "gemm_bound_test" "GemmProbabilistic"
mutate "all-reduce: identity check skipped" collective_check.cc \
  "if (members[rep[c]].recv->data == members[r].recv->data) cls[r]" "if (true) cls[r]" \
  "collective_check_test" "CollectiveCheck"
mutate "replica: parted replicas taken as identical" replica_check.cc \
  "        if (classes.size() == 1) {" "        if (true) {" "replica_check_test" "ReplicaCheck"
mutate "replica: constant operands taken as replicas" replica_check.cc \
  "if (o.present && !o.constant) classes" "if (o.present) classes" "replica_check_test" "ReplicaCheck"
# ttrace diff.
mutate "diff: shard row blocks merged in reverse order" diff_sharded.cc \
  "PlaceBlock(data(s), rows, cols, bi, bj, rs, cs, full);" \
  "PlaceBlock(data(s), rows, cols, pr - 1 - bi, bj, rs, cs, full);" "diff_test" "^Diff"
mutate "diff: bitwise mode ignores the last operand slot" diff.cc \
  "if (x != nullptr && y != nullptr && x->data != y->data) return SlotName(slots[i]);" \
  "if (i + 1 < n && x != nullptr && y != nullptr && x->data != y->data) return SlotName(slots[i]);" \
  "diff_test" "^Diff"
mutate "diff: value all-reduce judged by one rank's input, not the sum of its inputs" diff_sharded_reduce.cc \
  "sum[e] += x[e], abs_sum[e] += std::fabs(x[e]);" "sum[e] = x[e], abs_sum[e] += std::fabs(x[e]);" \
  "diff_test" "^Diff"
mutate "diff: value all-reduce's output bound without its inputs' difference" diff_sharded_reduce.cc \
  "const double bound = rb.Bound({sum[e], abs_sum[e]}) + std::fabs(sum[e] - ref_in[e]) +" \
  "const double bound = rb.Bound({sum[e], abs_sum[e]}) + 0 * std::fabs(sum[e] - ref_in[e]) +" "diff_test" "^Diff"
mutate "pipeline: sends to oneself not taken as an exchange" pipeline.cc \
  "if (op.coll.root_or_peer == op.coll.comm_rank) exchange_.insert" "if (false) exchange_.insert" \
  "pipeline_test moe_diff_e2e_test" "^Pipeline|MoeDiffE2e"
mutate "pipeline: talking to three ranks not taken as an exchange" pipeline.cc \
  "if (peers.size() >= 3) exchange_.insert(key.first);" "if (false) exchange_.insert(key.first);" \
  "pipeline_test" "^Pipeline"
mutate "pipeline: a first group that sends to and receives from one peer not taken as an exchange" pipeline.cc \
  "      if (two_way) exchange_.insert(comm);" "      if (false) exchange_.insert(comm);" \
  "pipeline_test moe_diff_e2e_test" "^Pipeline|MoeDiffE2e"
mutate "pipeline: one rank's two-way first group taken as an exchange (not every rank's)" pipeline.cc \
  "auto it = starts_two_way.emplace(comm, true).first;" \
  "auto it = starts_two_way.emplace(comm, false).first; it->second = it->second || two_way; continue;" \
  "pipeline_test" "^Pipeline"
mutate "diff: an averaging scale taken whenever it lowers the error (not only when it explains the data)" \
  diff_sharded.cc "    if (e < *rel && e <= within) {" "    if (e < *rel) {" "diff_test moe_diff_e2e_test" \
  "DiffShard|FsdpDiffE2e"
mutate "diff: a scale explains data 2x farther than kScaleExplains" diff_sharded.h \
  "inline constexpr double kScaleExplains = 0.25;" "inline constexpr double kScaleExplains = 0.5;" "diff_test" \
  "DiffShard"
mutate "diff: two gather inputs holding one chunk read as a reordering" diff_operands.cc \
  "    if (uses[match[c]] > 1 && match[c] != c) bad = c;" "    if (false) bad = c;" "moe_diff_e2e_test" "FsdpDiffE2e"
mutate "diff: a gather's finding names the reference GEMM, not the gather's own reference op" diff_operands.cc \
  "    return i >= 0 ? &ref_.ranks[0].ops[static_cast<size_t>(i)] : nullptr;" "    return nullptr;" \
  "moe_diff_e2e_test" "FsdpDiffE2e"
mutate "diff: a gather feeding a transposed operand compared in logical, not stored, order" diff_operands.cc \
  "    const auto stored = [&](std::vector<double> v) { return OpFolded(v, rows, cols, 1, trans); };" \
  "    const auto stored = [&](std::vector<double> v) { return v; };" "moe_diff_e2e_test" "FsdpDiffE2e"
mutate "diff: the reference's sends to itself left unaligned" diff_sharded.cc \
  "if (IsSelfTransfer(rops[i]) || bucket) {" "if (bucket) {" "moe_diff_e2e_test" \
  "MoeDiffE2e"
mutate "diff: a reference collective without a rule not folded" diff_sharded.cc \
  "      folded_ref[i] = true;" "      rep().AddNotChecked(\"no diff rule for this API\");" "moe_diff_e2e_test" "MoeDiffE2e"
mutate "diff: a divided copy allowed two roundings" shard.cc \
  "if (std::fabs(x[e] - want) > f.u * std::fabs(want) + f.eta) return -1;" \
  "if (std::fabs(x[e] - want) > 2 * f.u * std::fabs(want) + f.eta) return -1;" "diff_test" "DiffShard"
mutate "diff: a bucket searched for divided gradients at its start only" shard.cc \
  "    i += taken == 0 ? 1 : taken;" "    i += taken == 0 ? x.size() : taken;" "diff_test diff_e2e_test" \
  "DiffShard|Bucket"
mutate "diff: the bucket scan's filter without the rounding window" shard.cc \
  "const double r = (f.u * std::fabs(h.first) + f.eta) * (1 + 1e-9);" \
  "const double r = 0 * (f.u * std::fabs(h.first) + f.eta) * (1 + 1e-9);" "diff_test" "DiffShard"
mutate "diff: the one-rank reference's gradient bucket left unaligned" diff_sharded.cc \
  "if (IsSelfTransfer(rops[i]) || bucket) {" "if (IsSelfTransfer(rops[i])) {" "diff_e2e_test" \
  "Bucket"
mutate "diff: the one-rank reference's bucket aligned with a bucket of shards judged as a value" diff_sharded.cc \
  "else if (other_count && IsOneRankBucket(rops, i)) folded_ref[i] = !CompareBucket(i, rops[i]);" \
  "else if (false) folded_ref[i] = true;" "diff_e2e_test" "Bucket"
mutate "diff: a TP x DP bucket folded, not compared segment by segment" diff_sharded.cc \
  "      if (bucket && CompareBucket(i, rops[i])) continue;" "      if (false) continue;" \
  "diff_e2e_test" "Bucket"
mutate "diff: a reduction compared at the scale its own op gives, not at the one a right reduction gives" \
  diff_sharded_reduce.cc "  const double want = dp && oc.scale >= p ? oc.scale / p : oc.scale;" \
  "  const double want = scale;" "diff_test diff_e2e_test moe_diff_e2e_test" "DiffSharded|Bucket|FsdpDiffE2e|MoeDiffE2e"
mutate "diff: every communicator's first split taken as data-parallel (features too)" diff_sharded.cc \
  "      if (!roled_.insert(h).second || d != &split.n) continue;" "      if (!roled_.insert(h).second) continue;" \
  "diff_test diff_e2e_test" "DiffSharded|DiffE2e"
mutate "diff: no communicator taken as data-parallel" diff_sharded.cc \
  "      if (!roled_.insert(h).second || d != &split.n) continue;" "      if (true) continue;" \
  "diff_test moe_diff_e2e_test" "DiffSharded|MoeDiffE2e|FsdpDiffE2e"
mutate "diff: a reduce-scatter of a GEMM's partial outputs folded, not compared" diff_sharded.cc \
  "kNcclReduceScatter) && IsLinked(i)) {" "kNcclReduceScatter) && false) {" "moe_diff_e2e_test" "FsdpDiffE2e"
mutate "diff: divide-then-sum's divided inputs taken for undivided ones" diff_sharded_reduce.cc \
  "  for (const ReducePart& part : parts) prescaled = prescaled && part.divided;" \
  "  for (const ReducePart& part : parts) prescaled = false && part.divided;" "diff_test" "DiffSharded"
mutate "diff: a value reduction's inputs summing to P x the reference's not said so" diff_sharded_reduce.cc \
  "    if (o.ratio_in > 1 && p > 1 &&" "    if (false && o.ratio_in > 1 && p > 1 &&" "diff_e2e_test" "Bucket"
mutate "diff: a bucket segment's received values read from the bucket's start" diff_sharded_reduce.cc \
  "    part_v = std::vector<double>(part_v.begin() + static_cast<std::ptrdiff_t>(part.offset)," \
  "    part_v = std::vector<double>(part_v.begin() + 0 * static_cast<std::ptrdiff_t>(part.offset)," "diff_e2e_test" \
  "Bucket"
mutate "diff: a bucket's first segment reported, not its worst" diff_sharded_reduce.cc \
  "  ReportReduce(rop, merged);" "  ReportReduce(rop, outs[0]);" "diff_e2e_test" "Bucket"
mutate "diff: any reference reduction holding a GEMM output taken for a bucket" diff_sharded.cc \
  "return s.size() >= 2 || (s.size() == 1 && s[0].length < op.coll.count);" "return !s.empty();" \
  "diff_e2e_test" "Bucket"
mutate "diff: divide-then-sum bound's rounding of each divided partial 2x too loose" diff_sharded_reduce.cc \
  "FormatOf(dt).u * oc.abs_partials[x] / p" "2 * FormatOf(dt).u * oc.abs_partials[x] / p" "diff_test" "DiffSharded"
mutate "diff: divide-then-sum reduction not linked to its GEMM" diff_sharded_reduce.cc \
  "      if (same || divided) {" "      if (same) {" "diff_test moe_diff_e2e_test" "DiffSharded|MoeDiffE2e"
mutate "diff: re-pairing by content with the data-parallel scales, none known before any split" diff_sharded.cc \
  "  const std::vector<double>& scales = sizes_;" "  const std::vector<double>& scales = scales_;" \
  "moe_diff_e2e_test" "MoeDiffE2e"
mutate "diff: same-signature GEMMs not re-paired by content" diff_sharded.cc \
  "if (there * kBetter < here && there < best)" "if (false && there * kBetter < here && there < best)" \
  "moe_diff_e2e_test" "MoeDiffE2e"
# The store.
mutate "deferred tensors: read on instead of seeking to their frame" analyzer/trace_model.cc \
  "(target.frame_index > (positioned" "(false && target.frame_index > (positioned" "trace_model_test" "TraceModelTest"
mutate "check: collective units' reports not merged" analyzer/check.cc \
  "          MergeOpReport(part, &report);
          for (const Op* op : plan.ops(item.unit)) {" "          (void)part;
          for (const Op* op : plan.ops(item.unit)) {" "check_test" "CheckThreads"
mutate "reader: payload CRC ignored" trace_reader.cc \
  "if (Crc32c(compressed_.data(), compressed_.size()) != fh.payload_crc)" \
  "if (false && Crc32c(compressed_.data(), compressed_.size()) != fh.payload_crc)" \
  "trace_store_test" "TraceStore|Crc32c"
mutate "reader: frame index not checked" trace_reader.cc "if (fh.frame_index != frames_read_)" \
  "if (false && fh.frame_index != frames_read_)" "trace_store_test" "TraceStore|Crc32c"
mutate "writer: a record's payload one byte short" trace_writer.cc \
  "if (payload_bytes) memcpy(at + sizeof rh + body_bytes, payload, payload_bytes);" \
  "if (payload_bytes) memcpy(at + sizeof rh + body_bytes, payload, payload_bytes - 1);" \
  "trace_store_test" "TraceStore|Crc32c"
mutate "writer: payload CRC over one byte fewer" trace_writer.cc "fh.payload_crc = Crc32c(compressed_.data() + kHead, n);" \
  "fh.payload_crc = Crc32c(compressed_.data() + kHead, n - 1);" "trace_store_test" "TraceStore|Crc32c"
mutate "writer: zstd trial over coded frames not gated" trace_writer.cc \
  "const bool trial = repeat_ || SampleSaves(body, room);" "const bool trial = true;" "coded_frame_test" "CodedFrames"
mutate "writer: a repeated coded payload not noticed" trace_writer.cc "    if (prints_[i] == h) {" \
  "    if (false && prints_[i] == h) {" "coded_frame_test" "CodedFrames"
mutate "writer: samples of a smooth coded frame never say it compresses" trace_writer.cc \
  "return out * 16 < in * 15;" "return out * 16 < in * 0;" "coded_frame_test" "CodedFrames"
mutate "writer: a fingerprint table too full to tell taken as no repeat" trace_writer.cc \
  "if (prints_used_ * 4 >= kPrints * 3) {" "if (prints_used_ * 4 >= kPrints * 4) {" "coded_frame_test" "CodedFrames"
mutate "writer: the trial one zstd level faster than the rule allows" trace_writer.cc \
  "constexpr int kTrialLevel = -4;" "constexpr int kTrialLevel = -5;" "coded_frame_test" "CodedFrames"
mutate "shim: FP8 E4M3 payloads not float-coded" capture_drain.cc "    case format::DType::kE4M3: case format::DType::kE5M2:" \
  "    case format::DType::kE5M2:" "shim_capture_engine_test" "CaptureEngineTest"
mutate "index: a frame's seqs not checked against its entry" stream_index.cc "if (s < e.min_seq || s > e.max_seq) {" \
  "if (false && (s < e.min_seq || s > e.max_seq)) {" "stream_index_test" "StreamIndex"
mutate "writer: index entry one seq short" trace_writer.cc "pending_max_seq_ = std::max(pending_max_seq_, seq);" \
  "pending_max_seq_ = std::max(pending_max_seq_, seq - 1);" "stream_index_test" "StreamIndex"
mutate "collector: frame payload checksum not checked" session.cc \
  "if (store::Crc32c(payload, frame_.compressed_size) != frame_.payload_crc) {" \
  "if (false && store::Crc32c(payload, frame_.compressed_size) != frame_.payload_crc) {" "session_test" "Session"
mutate "collector: an index entry's record count not checked against its frame" session.cc \
  "entry_.record_count != frame_.record_count ||" "false ||" "fuzz_collector_session" \
  "fuzz_collector_session_replay"
mutate "collector: acks numbered from 0" session.cc "wire::Ack ack{wire::kAckMagic, 0, frames_};" \
  "wire::Ack ack{wire::kAckMagic, 0, frames_ - 1};" "fuzz_collector_session" "fuzz_collector_session_replay"
mutate "crc32c: table polynomial" crc32c.cc "(c >> 1) ^ 0x82F63B78u" "(c >> 1) ^ 0x82F63B79u" \
  "trace_store_test" "TraceStore|Crc32c"
# The shim.
mutate "shim: one element fewer copied" tensor_pack.cc \
  "memcpy(out, src, col_bytes * static_cast<size_t>(spec.cols));" \
  "memcpy(out, src, col_bytes * static_cast<size_t>(spec.cols) - elem);" \
  "shim_tensor_pack_test" "TensorPack"
mutate "shim: a group's tensors staged at one ring offset" capture_engine.cc \
  "      at += planned[i].ring_bytes;
      ++tensors_pushed_;" "      ++tensors_pushed_;" "ttrace_shim shim_capture_engine_test" "CaptureEngine"
mutate "shim: seq off by one" capture_records.cc "const Slot slot{p.ticket, op ? p.seq : kNoSeq};" \
  "const Slot slot{p.ticket, op ? p.seq + 1 : kNoSeq};" "shim_capture_engine_test" "CaptureEngine"
mutate "shim: C captured after a failed GEMM" cublas_interceptors.cc \
  $'if (capture && status == CUBLAS_STATUS_SUCCESS) {\n    TensorGroup output' $'if (capture) {\n    TensorGroup output' \
  "ttrace_shim shim_status_standin_test" "ShimStatusStandin"
mutate "shim: a GEMM's status not recorded" cublas_interceptors.cc "  r.status = status;" "  r.status = 0;" \
  "ttrace_shim shim_status_standin_test" "ShimStatusStandin"
mutate "shim: received data captured after a failed collective" nccl_capture.cc \
  "if (capture && status == ncclSuccess) {" "if (capture) {" \
  "ttrace_shim shim_status_standin_test" "ShimStatusStandin"
mutate "shim: a rewritten pointer array not noticed" capture_drain.cc \
  "if (memcmp(staged, staged + array_bytes, array_bytes) != 0) {" "if (false) {" \
  "ttrace_shim shim_capture_engine_test shim_batched_capture_test" "CaptureEngine|BatchedCapture"
mutate "shim: pointer-array batches read from the wrong array" cublas_interceptors.cc \
  "slot == TensorSlot::kA ? c.a_array : slot == TensorSlot::kB ? c.b_array : c.c_array;" \
  "slot == TensorSlot::kA ? c.b_array : slot == TensorSlot::kB ? c.a_array : c.c_array;" \
  "ttrace_shim shim_batched_capture_test" "BatchedCapture"
mutate "shim: a stream-captured graph launch's record without its payload" capture_graph.cc \
  "    Publish(slot, type, record.data(), body_bytes, record.data() + body_bytes, record.size() - body_bytes);" \
  "    Publish(slot, type, record.data(), body_bytes);" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.StreamCaptured"
# cuDNN's native CUDA graphs (capture_native_graph.cc).
mutate "shim: native-graph input snapshots not before cuDNN's roots" capture_native_graph.cc \
  "d->GraphAddDependencies(graph, from.data(), roots.data(), roots.size())" \
  "d->GraphAddDependencies(graph, from.data(), roots.data(), 0)" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraph"
mutate "shim: native-graph output snapshots not after cuDNN's leaves" capture_native_graph.cc \
  "const std::vector<CUgraphNode>& deps = input ? root_deps : leaves;" \
  "const std::vector<CUgraphNode>& deps = root_deps;" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraph"
mutate "shim: cuDNN's node parameters not copied back after its update of the clone" capture_native_graph.cc \
  "const auto [done, r] = set(params.size(), 0);" "const auto [done, r] = set(0, 0);" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraph"
mutate "shim: native-graph snapshot copies not retargeted after an update" capture_native_graph.cc \
  "const auto [moved, r2] = retarget(copies.size(), true);" "const auto [moved, r2] = retarget(0, true);" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraph"
mutate "shim: a native-graph update does not become the launches' template" capture_native_graph.cc \
  "    op->record = record;" "" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraph"
mutate "shim: cuDNN's refused update of the clone retried on the graph without the snapshots" \
  capture_native_graph.cc $'    *why = "cuDNN\'s update failed (the graph is as it was)";\n    return status;' \
  $'    return without_us("refused");' \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraph"
mutate "shim: a native-graph update's tensors read only while capturing" cudnn_backend.cc \
  "if (!known || (populate && !capture)) specs.clear();" "if (!capture) specs.clear();" \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.NativeCudaGraphUpdatedAfterCaptureStopped"
mutate "shim: an uncaptured native-graph update removes the snapshot nodes" capture_native_graph.cc \
  "if (!problem.empty() && !NativeScratch(&scratch, &no_scratch)) {" "if (!problem.empty()) {" \
  "ttrace_shim shim_capture_engine_test" "CaptureEngineTest.NativeGraphUpdate"
mutate "shim: neutralised native-graph snapshot copies left on the old pack" capture_native_graph.cc \
  "      } else if (to_new) {" "      } else if (false) {" \
  "ttrace_shim shim_capture_engine_test" "CaptureEngineTest.NativeGraphUpdate"
mutate "shim: launches of a native graph with neutralised copies still publish" capture_native_graph.cc \
  "    for (NativeGraphOp* o : hosts) o->record.clear();" "" \
  "ttrace_shim shim_capture_engine_test" "CaptureEngineTest.NativeGraphUpdate"
mutate "shim: neutralised copies of two ops in one graph silence only one op's launches" capture_native_graph.cc \
  "    for (NativeGraphOp* o : hosts) o->record.clear();" "    if (op != nullptr) op->record.clear();" \
  "ttrace_shim shim_capture_engine_test" "CaptureEngineTest.NativeGraphUpdate"
mutate "shim: pointer arrays snapshotted inside a CUDA graph capture" capture_engine.cc \
  "} else if (spec.ptr_array != nullptr) {" "} else if (false) {" \
  "ttrace_shim shim_capture_engine_test" "CaptureEngine"
mutate "shim: TTRACE_OPS ignored" runtime.cc "if (state == kEnabled) return g_api_selected[api_index];" \
  "if (state == kEnabled) return true;" "ttrace_shim shim_integration_test" "ShimIntegrationTest.OpsFilter"
mutate "shim: device-memory pointer arrays read" capture_engine.cc "  if (type != CU_MEMORYTYPE_HOST) {" \
  "  if (false) {" "ttrace_shim shim_capture_engine_test shim_batched_capture_test" "CaptureEngine|BatchedCapture"
mutate "shim: convolution output captured after a failed call" cudnn_interceptors.cc \
  "if (capture && status == CUDNN_STATUS_SUCCESS)" "if (capture)" \
  "ttrace_shim shim_status_standin_test" "ShimStatusStandin"
mutate "shim: a problem said once per job said by every rank" shim/log.cc \
  "  if (fd < 0 && errno == EEXIST && !dir.empty()) return;" "  if (false) return;" \
  "ttrace_shim shim_context_capture_test" "ContextCapture"
mutate "shim: the job's marker not keyed by its launcher (a later job silent)" shim/log.cc \
  "  const int parent = static_cast<int>(getppid());" "  const int parent = 0;" \
  "ttrace_shim shim_context_capture_test" "ContextCapture"
mutate "shim: a job streaming to a collector says a problem on every rank (the host's name not held)" shim/log.cc \
  "    case Claim::kTaken: return;  // a live process of the job on this host said it" \
  "    case Claim::kTaken: return Log(\"%s\", text);" \
  "ttrace_shim ttrace-collector collector_e2e_test" "CollectorE2e.CuptiRefusal"
mutate "shim: the host's name released at once (ranks starting later say it again)" shim/log.cc \
  "    return Claim::kOurs;" "    return close(fd), Claim::kOurs;" \
  "ttrace_shim ttrace-collector collector_e2e_test" "CollectorE2e.CuptiRefusal"
mutate "shim: a library's own kernels counted between ops" cupti_context.cc \
  "if (d->callbackSite != CUPTI_API_ENTER || InsideInterceptor()) return;" \
  "if (d->callbackSite != CUPTI_API_ENTER) return;" "shim_cupti_context_test" "CuptiContext"
mutate "shim: context records not attached to findings" check.cc \
  "    if (const Op* op = FindOp(set, f.rank, f.seq)) f.context = op->context;" \
  "    (void)FindOp(set, f.rank, f.seq);" "ttrace ttrace_shim shim_context_capture_test" "ContextCapture"
# This stop's additions (stop 21): graph ReLU clips, the ALiBi/Max/Sum_exp attention check, simgpu's RESHAPE,
# the codec's count-limited code lengths, the refused-splice fallback.
mutate "graph: leaky ReLU's slope dropped" graph_check.cc \
  "*r = x <= c.lower ? c.lower + c.slope * (x - c.lower) : x >= c.upper ? c.upper : x;" \
  "*r = x <= c.lower ? c.lower : x >= c.upper ? c.upper : x;" "graph_check_test" "ConvFusionTest"
mutate "graph: a ReLU's upper clip not read" graph_check.cc \
  "if (g.params_set & format::kParamReluUpperClip) c.upper = g.relu_upper_clip;" "" \
  "graph_check_test" "ConvFusionTest"
mutate "graph: attention Max under twice its bound" graph_check.cc \
  "out.max.Add(row, p.max[row], m, kEval * E, false);" "out.max.Add(row, p.max[row], m, 2 * kEval * E, false);" \
  "graph_check_test" "SdpaBoundTest|CompositeAttentionTest"
# Stop 22: the composite attention evaluated in slices, its working set in OpCost.
mutate "graph: attention slice's GEN_INDEX offset dropped" graph_attention.cc \
  "static_cast<double>(idx[g.axis] + index_base[g.axis])" "static_cast<double>(idx[g.axis])" \
  "graph_check_test" "CompositeAttentionTest"
mutate "graph: attention's last slice skipped" graph_attention.cc "for (int64_t k = 0; k < boxes; ++k) {" \
  "for (int64_t k = 0; k < boxes - (boxes > 1); ++k) {" "graph_check_test" "CompositeAttentionTest"
mutate "graph: attention slice's inputs read at the first batch and head" graph_attention.cc \
  "(idx[d] + (d < 4 && t.dims[d] != 1 ? box.lo[d] : 0)) * stride[d]" "idx[d] * stride[d]" \
  "graph_check_test" "CompositeAttentionTest"
mutate "graph: attention evaluated whole, never sliced" graph_attention.cc "  plan.sliced = true;" "  return plan;" \
  "ttrace graph_check_test verdict_test" "CompositeAttentionTest|BudgetTest.Attention"
mutate "check: a cuDNN graph's working set left out of OpCost" check.cc "uint64_t cost = GraphWorkingSet(op);" \
  "uint64_t cost = 0;" "ttrace verdict_test" "BudgetTest.Attention|BudgetTest.GraphCost"
mutate "graph: conv.fused's working set not counted" graph_conv.cc "  return bytes + 8 * largest;" "  return 0;" \
  "ttrace verdict_test" "BudgetTest.GraphCost"
mutate "simgpu: RESHAPE reads its input contiguously" graph_kernels.cc \
  "Store<double>(y, off, Load<double>(x, off));" "Store<double>(y, off, Load<double>(x, e));" \
  "simgpu_cudnn simgpu_cudnn_backend_test" "CudnnBackend.Reshape"
mutate "simgpu: cudaGraphExecUpdate keeps the executable's old work" core/capture.cc \
  "  if (!AppendWorks(graph, works.get())) return cudaErrorGraphExecUpdateFailure;" "  *works = *exec->works;" \
  "simgpu simgpu_cudnn_backend_test" "CudnnBackend.NativeCudaGraph"
mutate "simgpu: cudnnBackendUpdateCudaGraph leaves the graph on the old pack" backend_api.cc \
  "    for (GraphNode* n : nodes) SetGraphNodeWork(graph, n, work);" "    for (GraphNode* n : nodes) (void)n;" \
  "simgpu_cudnn simgpu_cudnn_backend_test" "CudnnBackend.NativeCudaGraph"
mutate "simgpu: a cloned child graph loses cuDNN's tags (cudnn-frontend's update refused)" core/capture.cc \
  "  node->tag = n.tag;" "" \
  "simgpu simgpu_cudnn_backend_test" "CudnnBackend.NativeCudaGraph"
mutate "simgpu: cudaGraphExecChildGraphNodeSetParams changes nothing" core/capture.cc \
  "  std::copy(embedded.begin(), embedded.end(), works->begin() + at);" \
  "" \
  "simgpu simgpu_cudnn_backend_test" "CudnnBackend.NativeCudaGraph"
mutate "simgpu: cudnnBackendUpdateCudaGraph rebinds a graph holding a node it did not populate" backend_api.cc \
  "    if (ours != nodes.size())" "    if (false)" \
  "simgpu_cudnn simgpu_cudnn_backend_test" "CudnnBackend.NativeCudaGraph"
mutate "simgpu: a graph launch runs nodes in creation order, not edge order" core/capture.cc \
  "  if (!LaunchOrder(graph, &order)) return false;" \
  "  for (size_t i = 0; i < graph->nodes.size(); ++i) order.push_back(i);" \
  "simgpu simgpu_driver_graphs_test simgpu_cudnn_backend_test" "DriverGraphs|CudnnBackend.NativeCudaGraphWithSnapshot"
mutate "simgpu: cuGraphKernelNodeSetParams leaves the node's kernel" core/capture.cc \
  "  node->kernel = std::move(live);" "" \
  "simgpu simgpu_driver_graphs_test simgpu_cudnn_backend_test" "DriverGraphs|CudnnBackend.NativeCudaGraphWithSnapshot"
mutate "simgpu: cudaGraphDestroyNode leaves the node's edges" core/capture.cc \
  "  for (const auto& n : graph->nodes) n->deps.erase(std::remove(n->deps.begin(), n->deps.end(), node), n->deps.end());" \
  "" "simgpu simgpu_driver_graphs_test simgpu_cudart_graph_nodes_test" "DriverGraphs|GraphNodes"
mutate "codec: limited code lengths one unit over the code space" float_codec.cc \
  "for (; kraft > kTableSize; --kraft) {" "for (; kraft > kTableSize + 1; --kraft) {" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: no code for the bytes a block's sample missed" float_codec.cc \
  "floored[c] = f[c] + (c >= lo && c <= hi && f[c] == 0);" "floored[c] = f[c];" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: a narrow code keeps bytes that do not occur" float_codec.cc \
  "if (missing && sampled <= kNarrowCode) {" "if (missing && sampled < 0) {" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: a code larger than raw kept" float_codec.cc \
  "  if (total >= 1 + n) return raw();
" "" "float_codec_test" "FloatCodecTest"
mutate "codec: the plane's range misses a lane's maximum" float_codec.cc \
  "_mm_max_epu8(mc, md)" "_mm_max_epu8(mc, mc)" "float_codec_test" "FloatCodecTest"
# Stop 26 (codec27): the pair table became a multi-symbol table (up to three symbols a lookup).
mutate "codec: a multi-symbol lookup always advances three symbols" float_codec.cc \
  "Store<uint32_t>(ds + (sum >> 56), " "Store<uint32_t>(ds + 3 * k, " "float_codec_test" "FloatCodecTest"
# Stop 26 (codec28): the multi-symbol decoder's output pointer moves once a round, its window is one bzhi.
mutate "codec: a multi-symbol round always advances twelve symbols" float_codec.cc \
  "  ds += sum >> 56;" "  ds += 12;" "float_codec_test" "FloatCodecTest"
mutate "codec: the multi-symbol entries' counts where the symbols' sum carries" float_codec.cc \
  "constexpr uint64_t kOne = uint64_t{1} << 56;" "constexpr uint64_t kOne = uint64_t{1} << 32;" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: the BMI2 multi-symbol window one bit short" float_codec.cc \
  'asm("bzhi %2, %1, %0" : "=r"(x) : "r"(w), "r"(k12));' 'asm("bzhi %2, %1, %0" : "=r"(x) : "r"(w), "r"(k12 - 1));' \
  "float_codec_test" "FloatCodecTest"
# Stop 27 (codec29): the multi-symbol table built by doubling (codec27's third-symbol, no-fit and bit-reversal
# mutations were of the walk it replaced).
mutate "codec: a multi-symbol window holding one code left from the last block" float_codec.cc \
  "    for (int i = first[L]; i < first[L + 1]; ++i)
      multi[codes.code[i]]" "    for (int i = first[L] + 1; i < first[L + 1]; ++i)
      multi[codes.code[i]]" "float_codec_test" "FloatCodecTest"
mutate "codec: the multi-symbol table's doubling copies half" float_codec.cc \
  "if (L > 1) memcpy(multi + (1u << (L - 1)), multi, sizeof(uint64_t) << (L - 1));" \
  "if (L > 1) memcpy(multi + (1u << (L - 1)), multi, sizeof(uint64_t) << (L - 2));" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: a multi-symbol window's third code read at its second's place" float_codec.cc \
  "multi[c12 | static_cast<uint32_t>(codes.code[k]) << l12] =" "multi[c12 | static_cast<uint32_t>(codes.code[k]) << l1] =" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: a multi-symbol window's third symbol stored over its second" float_codec.cc \
  "static_cast<uint64_t>(codes.sym[k]) << (kMaxLen + 16));" "static_cast<uint64_t>(codes.sym[k]) << (kMaxLen + 8));" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: the single-symbol table's doubling copies half" float_codec.cc \
  "if (l > 1) memcpy(table + (1u << (l - 1)), table, sizeof(uint16_t) << (l - 1));" \
  "if (l > 1) memcpy(table + (1u << (l - 1)), table, sizeof(uint16_t) << (l - 2));" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: an FP8 plane decoded straight to the output not unrotated" float_codec.cc \
  "codes->sym[k] = unrotate ? Unrotate(static_cast<uint8_t>(s)) : static_cast<uint8_t>(s);" \
  "codes->sym[k] = static_cast<uint8_t>(s);" "float_codec_test" "FloatCodecTest"
mutate "codec: an FP8 delta plane decoded straight to the output" float_codec.cc \
  "pp->unrotated = unrotate && mode != kHuffmanDelta;" "pp->unrotated = unrotate;" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: the AVX2 FP16 compose leaves the low plane's quarters in order" float_codec.cc \
  "const __m256i l = _mm256_permute4x64_epi64(Load256(lower[0] + i), 0xd8);" \
  "const __m256i l = _mm256_permute4x64_epi64(Load256(lower[0] + i), 0xe4);" "float_codec_test" "FloatCodecTest"
mutate "codec: the AVX2 FP32 compose pairs the wrong lanes" float_codec.cc \
  "Store256(out + 4 * i + 64, _mm256_permute2x128_si256(r0, r1, 0x31));" \
  "Store256(out + 4 * i + 64, _mm256_permute2x128_si256(r0, r1, 0x30));" "float_codec_test" "FloatCodecTest"
# codec30: narrow planes coded a pair of neighbouring bytes a lookup.
mutate "codec: a pair's second code shifted by its own length" float_codec.cc \
  "static_cast<uint64_t>(code16[b]) << len[a];" "static_cast<uint64_t>(code16[b]) << len[b];" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: pairs of 64 bits of codes a round" float_codec.cc \
  "std::min(8, 24 / longest)" "std::min(8, 32 / longest)" "float_codec_test" "FloatCodecTest"
mutate "codec: the pair table's offset 256 lo" float_codec.cc \
  "const size_t off = 257 * static_cast<size_t>(lo);" "const size_t off = 256 * static_cast<size_t>(lo);" \
  "float_codec_test" "FloatCodecTest"
# codec32: the AVX2 pass marking the bytes a narrow code's sample missed.
mutate "codec: the AVX2 byte marks look up the other nibble table" float_codec.cc \
  "_mm256_shuffle_epi8(lo_table, low), _mm256_shuffle_epi8(hi_table, low), x)" \
  "_mm256_shuffle_epi8(hi_table, low), _mm256_shuffle_epi8(lo_table, low), x)" "float_codec_test" "FloatCodecTest"
mutate "codec: the AVX2 byte marks mark one new byte a vector" float_codec.cc \
  "    for (; m; m &= m - 1) mark(sym[i + static_cast<size_t>(__builtin_ctz(m))]);" \
  "    mark(sym[i + static_cast<size_t>(__builtin_ctz(m))]);" "float_codec_test" "FloatCodecTest"
mutate "codec: the bytes after the AVX2 byte marks' last vector not marked" float_codec.cc \
  "  if (kHaveAvx2) i = MarkPresentAvx2(sym, n, present);" \
  "  if (kHaveAvx2) i = MarkPresentAvx2(sym, n, present); return;" "float_codec_test" "FloatCodecTest"
# codec32: four-stream planes of mostly two bytes coded sixteen bytes two lookups.
mutate "codec: a run's two entries appended in the wrong order" float_codec.cc \
  "      PutSymbol(run[m & 255], acc, bits);" "      PutSymbol(run[m >> 8], acc, bits);" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: a run's second half joined at its own length" float_codec.cc \
  "(code4[m & 15] | code4[m >> 4] << len4[m & 15])" "(code4[m & 15] | code4[m >> 4] << len4[m >> 4])" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: a round taken as runs without testing for the first byte" float_codec.cc \
  "_mm_or_si128(_mm_cmpeq_epi8(x, va), is_b)" "_mm_cmpeq_epi8(x, x)" "float_codec_test" "FloatCodecTest"
mutate "codec: a round of other bytes drops one" float_codec.cc \
  "        PutSymbol(entry[sym[k + 2]], acc, bits);
" "" "float_codec_test" "FloatCodecTest"
mutate "codec: runs of codes of 4 bits (64 bits between two stores)" float_codec.cc \
  "constexpr int kRunMaxLen = 3;" "constexpr int kRunMaxLen = 4;" "float_codec_test" "FloatCodecTest"
mutate "codec: an eight-stream pair's second stream read two bytes on" float_codec.cc \
  "const ptrdiff_t b_at = kStep == kWideStreams ? 1 : sb - sa;" \
  "const ptrdiff_t b_at = kStep == kWideStreams ? 2 : sb - sa;" "float_codec_test" "FloatCodecTest"
mutate "codec: the AVX2 prefix sum drops the previous vector's last byte" float_codec.cc \
  "    x = _mm256_add_epi8(x, carry);" "" "float_codec_test" "FloatCodecTest"
mutate "codec: the AVX2 prefix sum drops the low lane's sum in the high lane" float_codec.cc \
  "    x = _mm256_add_epi8(x, _mm256_permute2x128_si256(lane_last, lane_last, 0x08));" "" "float_codec_test" \
  "FloatCodecTest"
# codec31: the streams of a multi-symbol plane go on alone after the four-stream rounds.
mutate "codec: a multi-symbol stream alone runs a round past its last 13 symbols" float_codec.cc \
  "std::min(left(ds, es), room(qs, start, size))" "std::min(left(ds, es) + 1, room(qs, start, size))" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: a multi-symbol stream's absolute bit position handed to the tail as it is" float_codec.cc \
  "  uint64_t q[kStreams] = {q0 - start0 * 8, " "  uint64_t q[kStreams] = {q0, " "float_codec_test" "FloatCodecTest"
# Stop 24: codec version 2's eight-stream planes.
mutate "codec: an eight-stream plane accepted in a version 1 payload" float_codec.cc \
  '  if (mode == kHuffman8 && version < 2) return "an eight-stream Huffman plane in a version 1 payload";
' "" "float_codec_test" "FloatCodecTest"
mutate "codec: eight-stream decoder writes stream 7 at stream 6's place" float_codec.cc \
  "      four(q7, d + 7 * kStride);" "      four(q7, d + 6 * kStride);" "float_codec_test" "FloatCodecTest"
mutate "codec: eight-stream tail steps by 7" float_codec.cc \
  "    for (size_t idx = s + j * S; idx < n; idx += S) {" "    for (size_t idx = s + j * S; idx < n; idx += S - 1) {" \
  "float_codec_test" "FloatCodecTest"
mutate "codec: the version 1 encoder writes eight streams" float_codec.cc \
  "version >= 2 ? kWideStreamsMinSymbols : SIZE_MAX" "kWideStreamsMinSymbols" "float_codec_test" "FloatCodecTest"
mutate "codec: pair-friendly planes coded in eight streams" float_codec.cc \
  "PairWindows(len) * 8 < kTableSize * 7" "PairWindows(len) * 8 < kTableSize * 9" "float_codec_test" "FloatCodecTest"
# Stop 25: the eight-stream plane's read room (guard page), the encoder's smooth-plane rule, the codec fuzzer.
mutate "codec: the eight-stream fast loop's read room one round too generous" float_codec.cc \
  "(stop[s] - 8 - byte) / 6 + 1 : 0);" "(stop[s] - 8 - byte) / 6 + 2 : 0);" "float_codec_test" "FloatCodecTest"
mutate "codec: planes whose neighbours repeat coded in eight streams anyway" float_codec.cc \
  "return pairs > 0 && equal * count * count > 2 * pairs * sum_sq;" "return false;" "float_codec_test" \
  "FloatCodecTest"
mutate "codec: neighbours' threshold twice too loose" float_codec.cc \
  "equal * count * count > 2 * pairs * sum_sq" "equal * count * count > 4 * pairs * sum_sq" "float_codec_test" \
  "FloatCodecTest"
# Stop 25 (codec26): codec version 3's delta planes.
mutate "codec: a delta plane accepted in a version 2 payload" float_codec.cc \
  '  if (mode == kHuffmanDelta && version < 3) return "a delta Huffman plane in a version 1 or 2 payload";
' "" "float_codec_test" "FloatCodecTest"
mutate "codec: the delta rule twice too loose" float_codec.cc \
  "return *hd * 8 < hv * 7;" "return *hd * 4 < hv * 7;" "float_codec_test" "FloatCodecTest"
mutate "codec: the delta rule twice too tight" float_codec.cc \
  "return *hd * 8 < hv * 7;" "return *hd * 16 < hv * 7;" "float_codec_test" "FloatCodecTest"
mutate "codec: the prefix sum drops the previous vector's last byte" float_codec.cc \
  "    x = _mm_add_epi8(x, carry);" "" "float_codec_test" "FloatCodecTest"
mutate "codec: the general path's prefix sum starts from 0, not the plane's first byte" float_codec.cc \
  "        uint8_t prev = pp.first;" "        uint8_t prev = 0;" "float_codec_test" "FloatCodecTest"
mutate "codec: a delta plane's header written without its first byte" float_codec.cc \
  "  if (delta) *o++ = first;" "" "float_codec_test" "FloatCodecTest"
mutate "codec: the version 2 encoder writes delta planes" float_codec.cc \
  "SIZE_MAX, version >= 3};" "SIZE_MAX, version >= 2};" "float_codec_test" "FloatCodecTest"
mutate "remote output: the pipe kept after a refused splice" remote_output.cc \
  "void RemoteOutput::RefuseSplice(const char* call, int err) {
  ClosePipe();" "void RemoteOutput::RefuseSplice(const char* call, int err) {" "server_test" "Server.RefusedSplice"
# Stop 22: sink-token attention (simgpu's pointwise MAX of a larger operand, the check's sink and O's η_in term).
mutate "simgpu: a larger MAX operand read at its broadcast index" graph_kernels.cc \
  "  if (shape != y.spec->dims) {" "  if (false) {" \
  "simgpu_cudnn simgpu_cudnn_backend_test" "CudnnBackend.PointwiseMaxOfALargerOperand"
mutate "graph: attention sink not in the replay's sum" graph_check.cc \
  "        if (sink) l += std::exp(p.sink[row] - m);" "" "graph_check_test" "SdpaBoundTest"
mutate "graph: attention O's bound without η_in" graph_check.cc \
  "(1 + theta_o) * p.eta_in * av" "0 * av" "graph_check_test" "SdpaBoundTest"
mutate "graph: attention sink token not recognized" graph_attention.cc \
  "    sink = f;" "    (void)f;" "ttrace_analyzer shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.SinkAttention"
mutate "simgpu: paged cache load ignores its page table" graph_kernels.cc \
  "        page = static_cast<int64_t>(Load<double>(page_table, Offset(page_table, at)));" "        page = j / block;" \
  "simgpu_cudnn simgpu_cudnn_backend_test" "CudnnBackend.PagedCacheLoad"
mutate "shim: a paged cache load's page table not recorded" cudnn_shadow.cc \
  "{{1950, 0, false}, {1953, 1, false}," "{{1950, 0, false}," \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.GraphWithoutChecker"
mutate "graph: paged attention's K replayed without its page table" graph_attention.cc \
  "      const double page = table[static_cast<size_t>(i * n + j / block)];" \
  "      const double page = static_cast<double>(i * n + j / block);" \
  "ttrace_analyzer shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.Paged"
mutate "simgpu: fused SDPA reads paged K and V without their page tables" graph_kernels.cc \
  "      out[j] = page >= 0 && page < static_cast<double>(container.dims[0]) ? static_cast<int64_t>(page) : -1;" \
  "      out[j] = (bi * table.spec->dims[2] + j / block) % container.dims[0] + 0 * static_cast<int64_t>(page);" \
  "simgpu_cudnn simgpu_cudnn_backend_test" "CudnnBackend.PagedFusedAttention"
mutate "shim: SDPA_FWD's page tables not recorded" cudnn_shadow.cc \
  "                                                              {2807, 8, false}, {2808, 9, false}}}," \
  "                                                              }}," \
  "ttrace_shim shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.PagedFused"
mutate "graph: fused SDPA's padding mask keeps keys past seq_len_kv" graph_check.cc \
  "    const int64_t keys = clamp(len_kv[bi], p->s_kv);" "    const int64_t keys = p->s_kv;" \
  "ttrace_analyzer shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.PagedFused"
mutate "graph: fused SDPA compares rows past seq_len_q" graph_check.cc \
  "    if (r % p->s_q >= clamp(len_q[bi], p->s_q)) {" "    if (false) {" \
  "ttrace_analyzer shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.PagedFused"
mutate "graph: paged attention compares keys past the load's lengths" graph_attention.cc \
  "        if (p.mask[e] && j >= len[static_cast<size_t>(bh / p.h)])" "        if (false)" \
  "ttrace_analyzer shim_cudnn_graph_capture_test" "CudnnGraphCaptureTest.PagedAttention"
# simgpu's reduction orders.
mutate "simgpu: pairwise panel levels combined in reverse" accumulate_panel.cc \
  "for (int lvl = top - 2; lvl >= 0; --lvl) {" "for (int lvl = 0; lvl <= top - 2; ++lvl) {" \
  "simgpu_cublas simgpu_cublaslt simgpu_cublas_types_test simgpu_cublaslt_matmul_test" \
  "accum_pairwise.Gemm|CublasLt.Matmul.pairwise"
mutate "simgpu: NCCL ring starts at the chunk's own rank" order.cc \
  "fn(i, end, static_cast<int>((c + 1) % shape.nranks));" "fn(i, end, static_cast<int>(c % shape.nranks));" \
  "simgpu_nccl simgpu_nccl_api_test" "InitAllTest|RingOrder"
mutate "simgpu: pairwise final combine left to right" accumulate.cc \
  "for (int i = top - 2; i >= 0; --i) s = Policy::Add(stack[i], s);" \
  "s = stack[0]; for (int i = 1; i < top; ++i) s = Policy::Add(s, stack[i]);" \
  "simgpu_cublas simgpu_cublaslt simgpu_cudnn simgpu_cublas_types_test simgpu_cublaslt_matmul_test simgpu_cudnn_conv_test" \
  "accum_pairwise|CublasLt.Matmul.pairwise"

# ---- the table ----------------------------------------------------------------------------------------------
elapsed=$(( $(date +%s) - start ))
printf '\n%-52s | %s\n' "mutation" "tests that failed (count: first three)"
printf '%s\n' "-----------------------------------------------------+-----------------------------------------------"
for i in "${!names[@]}"; do printf '%-52s | %s\n' "${names[$i]}" "${results[$i]}"; done
printf '\n%d mutations, %d survived, %d s\n' "${#names[@]}" "$survived" "$elapsed"
[ "$survived" = 0 ]
