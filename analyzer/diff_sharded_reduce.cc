// Batched GEMMs with per-entry A (diff_batched.h) and the all-reduces and reduce-scatters (sequence parallelism)
// that sum k-split partial outputs, for the sharded diff (diff_sharded_state.h): a reduction is linked to its GEMM
// by data (the first later collective on the same rank whose input equals the GEMM's output), else by element
// count, and compared with the reference's all-reduce, or with the reference GEMM's output when the one-rank
// reference has none. A reduce-scatter's output block is its ranks' chunks in comm-rank order (NCCL's layout).
#include <cmath>
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "analyzer/diff_batched.h"
#include "analyzer/diff_sharded.h"
#include "analyzer/diff_sharded_state.h"
#include "analyzer/error_model.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer::diff_internal {

using format::DType;
using format::TensorSlot;

void Sharded::CompareBatched(size_t i, const Op& rop) {
  const std::vector<std::pair<int, const Op*>> shards = ShardsOf(i);
  const BatchedComparison b = CompareBatchedGemm(rop, shards, scales_);
  if (!b.not_checked.empty()) return rep().AddNotChecked(b.not_checked);
  const OpName name{shards[0].first, shards[0].second->seq, shards[0].second->api_name()};
  const double tau = 2 * max_out_rel_ + b.eps_in;
  bool between = false;
  for (const auto& [operand, rel, abs] : {std::tuple<const char*, double, double>{"A", b.rel_a, b.abs_a},
                                          {"B", b.rel_b, b.abs_b}}) {
    if (between || rel <= tau) continue;
    between = true;
    Find("diff.between", name, rop, operand, "between", rel, abs, b.eps_in, rel / tau, tau, "diff.between",
         absl::StrCat("input ", operand, " differs from the reference's by ", FormatNumber(rel),
                      " (relative Frobenius) > ", FormatNumber(tau), " = 2 x the largest output error before + eps"),
         b.detail);
  }
  rep().AddChecked("diff.gemm", name, b.stats, b.stats.violations == 0);
  if (b.stats.violations > 0) {
    Find("diff.inside", b.worst, rop, "C", "inside", b.rel_c, b.stats.max_abs_err, b.eps_out, b.stats.worst_ratio,
         b.stats.worst_bound, "diff.propagation",
         absl::StrCat(b.stats.violations, " of ", b.stats.elements, " elements differ from the reference beyond ",
                      "what the input differences and round-off allow"),
         b.detail);
  } else if (!between) {
    has_last_ = true;
    last_ = name;
  }
  max_out_rel_ = std::max(max_out_rel_, b.rel_c);
}

namespace {

bool IsReduceScatter(const Op& op) {
  return op.kind == OpKind::kCollective && op.api == static_cast<uint16_t>(format::ApiId::kNcclReduceScatter);
}

// Elements each rank sends: a reduce-scatter's count is what each rank receives.
uint64_t SendCount(const Op& op) {
  return IsReduceScatter(op) ? op.coll.count * static_cast<uint64_t>(std::max(op.coll.comm_size, 1)) : op.coll.count;
}

ReduceOutcome Unchecked(std::string why) {
  ReduceOutcome o;
  o.not_checked = std::move(why);
  return o;
}

}  // namespace

bool IsOutputReduction(const Op& op) {
  return op.kind == OpKind::kCollective && (op.api == static_cast<uint16_t>(format::ApiId::kNcclAllReduce) ||
                                            IsReduceScatter(op));
}

void Sharded::LinkOutputs(size_t i, const std::vector<Shard>& shards) {
  for (const Shard& s : shards) {
    const RankTrace* rt = nullptr;
    for (const RankTrace& r : cand_.ranks)
      if (r.rank() == s.rank) rt = &r;
    const Tensor* c = s.op->tensor(TensorSlot::kCOut);
    const size_t start = static_cast<size_t>(s.op - rt->ops.data()) + 1;
    const Op* by_count = nullptr;
    bool linked = false;
    for (size_t j = start; j < rt->ops.size() && j < start + static_cast<size_t>(opt_.max_gap) && !linked; ++j) {
      const Op& op = rt->ops[j];
      if (op.kind != OpKind::kCollective || SendCount(op) != static_cast<uint64_t>(s.g.m * s.g.n)) continue;
      auto taken = links_.find({s.rank, &op});
      if (taken != links_.end() && taken->second.same_data) continue;
      const Tensor* send = op.tensor(TensorSlot::kSend);
      const bool same = c != nullptr && send != nullptr && send->data == c->data;
      const bool divided = !same && c != nullptr && send != nullptr && op.coll.red_op == 0 &&
                           send->meta.dtype == c->meta.dtype && IsFloatDType(static_cast<DType>(c->meta.dtype)) &&
                           IsDividedCopy(DecodeAll(static_cast<DType>(send->meta.dtype), send->data),
                                         DecodeAll(static_cast<DType>(c->meta.dtype), c->data), op.coll.comm_size,
                                         FormatOf(static_cast<DType>(c->meta.dtype)));
      if (same || divided) {
        links_[{s.rank, &op}] = Link{static_cast<int64_t>(i), s.op, true, divided};
        linked = true;
      } else if (by_count == nullptr && taken == links_.end()) {
        by_count = &op;
      }
    }
    if (!linked && by_count != nullptr) links_[{s.rank, by_count}] = Link{static_cast<int64_t>(i), s.op, false};
  }
}

void Sharded::CompareReduce(const std::vector<std::pair<int, const Op*>>& shards, const Op& rop,
                            const std::vector<double>* ref_c) {
  int64_t g = -1;
  std::vector<ReducePart> parts;
  for (const auto& [rank, op] : shards) {
    auto it = links_.find({rank, op});
    if (it == links_.end() || (g >= 0 && it->second.gemm_ref != g))
      return rep().AddNotChecked("all-reduce not fed by an aligned GEMM");
    g = it->second.gemm_ref;
    const Tensor* recv = op->tensor(TensorSlot::kRecv);
    parts.push_back(ReducePart{rank, op, it->second.gemm, it->second.same_data, it->second.divided, 0,
                               recv != nullptr ? recv->data.size() / format::DTypeSize(recv->meta.dtype) : 0});
  }
  const GemmOutcome& oc = outcomes_.at(static_cast<size_t>(g));
  std::vector<double> ref;
  if (ref_c != nullptr) {
    ref = *ref_c;
  } else {
    const Tensor* rrecv = rop.tensor(TensorSlot::kRecv);
    if (rop.coll.comm_size != 1 || rrecv == nullptr || rop.coll.count != static_cast<uint64_t>(oc.m * oc.n))
      return rep().AddNotChecked("reference all-reduce not comparable");
    ref = DecodeAll(static_cast<DType>(rrecv->meta.dtype), rrecv->data);
  }
  ReduceOutcome o = ReduceAgainst(g, parts, rop, ref, ref_c != nullptr);
  if (!o.not_checked.empty()) return rep().AddNotChecked(o.not_checked);
  ReportReduce(rop, o);
}

void Sharded::ReportReduce(const Op& rop, const ReduceOutcome& o) {
  rep().AddChecked(o.scatter ? "diff.reducescatter" : "diff.allreduce", o.name, o.stats, o.stats.violations == 0);
  FindInsideRecv(rop, o.name, o.name, o.rel, o.eps, o.stats, "the bound of the GEMM it reduces plus the reduction's",
                 o.detail, o.plain);
  max_out_rel_ = std::max(max_out_rel_, o.rel);
}

void Sharded::FindInsideRecv(const Op& rop, const OpName& at, const OpName& name, double rel, double eps,
                             const ElementStats& stats, const std::string& bound, const std::string& detail,
                             const std::string& plain) {
  if (stats.violations == 0) {
    has_last_ = true;
    last_ = name;
    return;
  }
  Find("diff.inside", at, rop, "recv", "inside", rel, stats.max_abs_err, eps, stats.worst_ratio, stats.worst_bound,
       "diff.propagation",
       absl::StrCat(plain.empty() ? "" : plain + "; ", stats.violations, " of ", stats.elements,
                    " elements differ from the reference beyond ", bound),
       detail);
}

ReduceOutcome Sharded::ReduceAgainst(int64_t g, const std::vector<ReducePart>& parts, const Op& rop,
                                     const std::vector<double>& ref, bool ref_is_gemm, size_t index_at) {
  ReduceOutcome out;
  const GemmOutcome& oc = outcomes_.at(static_cast<size_t>(g));
  const DType dt = DTypeFromNccl(parts[0].op->coll.nccl_dtype);
  const double eps = Epsilon(dt);
  out.eps = eps;
  std::vector<double> got(ref.size(), 0);
  std::vector<bool> seen(static_cast<size_t>(oc.split.m.factor * oc.split.n.factor), false);
  const Op& c0 = *parts[0].op;
  const int p = c0.coll.comm_size;
  // An average is ncclAvg, or a sum whose every input is its GEMM's output divided by p (divide-then-sum).
  bool prescaled = c0.coll.red_op == 0 && p > 1;
  for (const ReducePart& part : parts) prescaled = prescaled && part.divided;
  const bool avg = c0.coll.red_op == 4 || prescaled;
  const double scale = oc.scale / (avg ? p : 1);  // the received values' scale, as the run reduced them
  // The scale a right reduction gives. Over a data-parallel communicator: the gradient of the whole batch's loss, so
  // partials that carry its size (per-rank mean losses) are averaged and partials of a global mean summed. Over one
  // that splits features (tensor parallelism): the partials' sum, at their scale.
  const bool dp = dp_comms_.count(c0.coll.comm_hash) > 0;
  const double want = dp && oc.scale >= p ? oc.scale / p : oc.scale;
  std::string detail = absl::StrCat(ref_is_gemm ? "no reduction in the reference: compared with the output of " : "",
                                    "reduces partial outputs of reference seq ", ref_.ranks[0].ops[g].seq,
                                    " split ", SplitText(oc.split), "; red_op ", c0.coll.red_op);
  if (c0.coll.red_op != 0 && c0.coll.red_op != 4)
    absl::StrAppend(&detail, want != oc.scale ? " (partial outputs are averaged: ncclAvg or divide-then-sum needed)"
                                              : " (partial outputs are summed: sum needed)");
  if (prescaled) absl::StrAppend(&detail, " (its inputs are the partial outputs divided by ", p, ": an average)");
  absl::StrAppend(&detail, dp ? "; data-parallel communicator" : "; tensor-parallel communicator",
                  oc.scale != 1 ? absl::StrCat(", partial outputs ", oc.scale, " x the reference's") : "");
  if (oc.split.k.factor > 1 && c0.coll.comm_hash != oc.split.k.comm)
    absl::StrAppend(&detail, "; reduces over comm 0x", absl::Hex(c0.coll.comm_hash),
                    ", the inner dimension is split over 0x",
                    absl::Hex(oc.split.k.comm));
  out.name = OpName{parts[0].rank, c0.seq, c0.api_name()};
  out.scatter = IsReduceScatter(c0);
  // Per output block (cm, cn): the reduced block, assembled from its ranks' chunks for a reduce-scatter.
  std::map<std::pair<int, int>, std::vector<double>> blocks;
  std::map<std::pair<int, int>, std::vector<bool>> chunks_seen;
  for (const ReducePart& part : parts) {
    const Op* op = part.op;
    const int rank = part.rank;
    const Tensor* recv = op->tensor(TensorSlot::kRecv);
    const Tensor* send = op->tensor(TensorSlot::kSend);
    const Tensor* c = part.gemm->tensor(TensorSlot::kCOut);
    if (recv == nullptr) return Unchecked(op->MissingTensorsReason());
    if (!part.same_data && send != nullptr && c != nullptr && send->meta.dtype == c->meta.dtype) {
      const std::vector<double> sv = DecodeAll(dt, send->data), cv = DecodeAll(dt, c->data);
      const double rel = RelFrobenius(sv, cv);
      Find("diff.between", {rank, op->seq, op->api_name()}, rop, "send", "between", rel, MaxAbsDiff(sv, cv), eps,
           std::numeric_limits<double>::infinity(), 0, "diff.between",
           absl::StrCat("its input is not the output of rank ", rank, " seq ", part.gemm->seq,
                        " that it reduces (relative difference ", FormatNumber(rel), ")"),
           detail);
    }
    int cm = 0, cn = 0, ck = 0;
    if (!ShardCoords(oc.split, comms_, rank, &cm, &cn, &ck)) return Unchecked("shard coordinates unknown");
    std::vector<double> part_v = DecodeAll(static_cast<DType>(recv->meta.dtype), recv->data);
    if (part.offset + part.length > part_v.size()) return Unchecked("reduction shapes differ");
    part_v = std::vector<double>(part_v.begin() + static_cast<std::ptrdiff_t>(part.offset),
                                 part_v.begin() + static_cast<std::ptrdiff_t>(part.offset + part.length));
    const size_t chunks = IsReduceScatter(*op) ? static_cast<size_t>(op->coll.comm_size) : 1;
    const size_t at = IsReduceScatter(*op) ? static_cast<size_t>(op->coll.comm_rank) : 0;
    std::vector<double>& block = blocks[{cm, cn}];
    std::vector<bool>& chunk_seen = chunks_seen[{cm, cn}];
    block.resize(static_cast<size_t>(oc.bm * oc.bn), 0);
    chunk_seen.resize(chunks, false);
    if (at >= chunks || part_v.size() * chunks != block.size()) return Unchecked("reduction shapes differ");
    if (chunk_seen[at]) continue;  // a replica: the lowest rank's is compared
    std::copy(part_v.begin(), part_v.end(), block.begin() + static_cast<std::ptrdiff_t>(at * part_v.size()));
    chunk_seen[at] = true;
  }
  if (got.size() != static_cast<size_t>(oc.m * oc.n)) return Unchecked("reduction shapes differ");
  for (const auto& [coords, block] : blocks) {
    for (bool b : chunks_seen[coords])
      if (!b) return Unchecked("reduction shards missing");
    seen[static_cast<size_t>(coords.first + coords.second * oc.split.m.factor)] = true;
    PlaceBlock(block, oc.bm, oc.bn, coords.first, coords.second, oc.split.m, oc.split.n, &got);
  }
  for (bool b : seen)
    if (!b) return Unchecked("all-reduce shards missing");
  const ReduceBound rb(FormatOf(dt), avg && !prescaled ? ReduceOp::kAvg : ReduceOp::kSum, p);
  for (size_t x = 0; x < got.size(); ++x) {
    got[x] /= want;
    const double sum = oc.partial_sum[x];
    // Divide-then-sum: the sum of the divided partials, each divided with one rounding (u·|partial|/p).
    const double b = oc.bound[x] + (prescaled ? rb.Bound({sum / p, oc.abs_partials[x] / p}) +
                                                    FormatOf(dt).u * oc.abs_partials[x] / p
                                              : rb.Bound({avg ? sum / p : sum, oc.abs_partials[x]})) / want;
    out.stats.Add(index_at + x, got[x], ref[x], b, false);
  }
  out.rel = RelFrobenius(got, ref);
  // A result off by the communicator's size, said plainly when that scale explains it.
  double off_rel = 0;
  if (out.stats.violations > 0 && scale != want &&
      ExplainingScale(got, ref, {scale / want}, kScaleExplains, &off_rel) != 1) {
    const std::string times = scale > want ? absl::StrCat(scale / want, " x the reference's")
                                           : absl::StrCat("1/", want / scale, " of the reference's");
    out.plain = absl::StrCat("the result is ", times, ": ",
                             !dp            ? "an average over a communicator that splits features (tensor "
                                              "parallelism), whose partial outputs need a sum"
                             : scale > want ? "a sum where the run's per-rank mean losses need an average"
                                            : "an average where the partial outputs (of a global-mean loss) need "
                                              "a sum");
  }
  out.detail = std::move(detail);
  return out;
}

bool Sharded::CompareBucket(size_t i, const Op& rop) {
  const Tensor* rrecv = rop.tensor(TensorSlot::kRecv);
  if (rrecv == nullptr || rop.coll.comm_size != 1) return false;
  const std::vector<DividedSegment> rsegs = RecentGemmSegments(ref_.ranks[0].ops, i, {1});
  if (rsegs.empty()) return false;
  // The candidate segments, by the reference GEMM their own GEMM is aligned with, from the candidate's sum
  // all-reduces between the candidate GEMMs aligned with the reference GEMMs around the bucket (its buckets need
  // not align one to one with the reference's: they hold other counts).
  const std::vector<Op>& rops = ref_.ranks[0].ops;
  std::map<int64_t, std::vector<ReducePart>> parts;
  for (size_t r = 0; r < cand_.ranks.size(); ++r) {
    const std::vector<Op>& ops = cand_.ranks[r].ops;
    const RankAlignment& a = align_[r];
    int64_t lo = -1, hi = static_cast<int64_t>(ops.size());
    for (size_t u = i; u-- > 0 && lo < 0;)
      if (rops[u].kind == OpKind::kGemm) lo = a.cand_of_ref[u];
    for (size_t u = i + 1; u < rops.size() && hi == static_cast<int64_t>(ops.size()); ++u)
      if (rops[u].kind == OpKind::kGemm && a.cand_of_ref[u] >= 0) hi = a.cand_of_ref[u];
    std::vector<size_t> reductions;
    for (int64_t j = lo + 1; j < hi; ++j) {
      const Op& op = ops[static_cast<size_t>(j)];
      if (op.kind == OpKind::kCollective && op.api == static_cast<uint16_t>(format::ApiId::kNcclAllReduce) &&
          op.coll.red_op == 0)
        reductions.push_back(static_cast<size_t>(j));
    }
    for (size_t j : reductions) {
      const int p = std::max(ops[j].coll.comm_size, 1);
      for (const DividedSegment& s : RecentGemmSegments(ops, j, p > 1 ? std::vector<int>{p, 1} : std::vector<int>{1})) {
        const int64_t g = a.ref_of_cand[s.op];
        if (g >= 0)
          parts[g].push_back(ReducePart{cand_.ranks[r].rank(), &ops[j], &ops[s.op], true, s.divisor > 1, s.offset,
                                        s.length});
      }
    }
  }
  // Each segment is judged at the scale a right reduction on its communicator gives (ReduceAgainst), so a segment its
  // rank forgot to divide is found here, in a bucket whose other segments are divided or not.
  const std::vector<double> rv = DecodeAll(static_cast<DType>(rrecv->meta.dtype), rrecv->data);
  std::vector<ReduceOutcome> outs;
  for (const DividedSegment& s : rsegs) {
    const int64_t g = static_cast<int64_t>(s.op);
    auto it = parts.find(g);
    if (it == parts.end() || outcomes_.count(s.op) == 0 || s.offset + s.length > rv.size()) return false;
    const std::vector<double> ref(rv.begin() + static_cast<std::ptrdiff_t>(s.offset),
                                  rv.begin() + static_cast<std::ptrdiff_t>(s.offset + s.length));
    outs.push_back(ReduceAgainst(g, it->second, rop, ref, false, s.offset));
    if (!outs.back().not_checked.empty()) return false;
    absl::StrAppend(&outs.back().detail, "; the bucket's segment at reference offset ", s.offset, " (", s.length,
                    " elements)");
  }
  // Counted once: every segment's elements, the worst segment reported.
  size_t worst = 0;
  for (size_t x = 1; x < outs.size(); ++x)
    if (outs[x].stats.worst_ratio > outs[worst].stats.worst_ratio) worst = x;
  ReduceOutcome merged = outs[0];
  for (size_t x = 1; x < outs.size(); ++x) {
    merged.stats.Merge(outs[x].stats);
    merged.rel = std::max(merged.rel, outs[x].rel);
  }
  merged.name = outs[worst].name;  // the candidate reduction that holds the worst segment, as the detail says
  merged.detail = outs[worst].detail;
  merged.plain = outs[worst].plain;
  for (const DividedSegment& s : rsegs)
    for (const ReducePart& part : parts[static_cast<int64_t>(s.op)]) compared_.insert(part.op);
  ReportReduce(rop, merged);
  return true;
}

void Sharded::CompareValueReduce(size_t i, const Op& rop) {
  const Tensor *rrecv = rop.tensor(TensorSlot::kRecv), *rsend = rop.tensor(TensorSlot::kSend);
  if (rop.coll.comm_size != 1 || rrecv == nullptr || (rop.coll.red_op != 0 && rop.coll.red_op != 4))
    return rep().AddNotChecked("all-reduce not fed by an aligned GEMM");
  const DType rdt = static_cast<DType>(rrecv->meta.dtype);
  const std::vector<double> ref_out = DecodeAll(rdt, rrecv->data);
  // One rank: the output is the input (kept apart all the same: an in-place call may capture only the output).
  const std::vector<double> ref_in = rsend != nullptr ? DecodeAll(rdt, rsend->data) : ref_out;
  if (calls_.empty())
    for (const RankTrace& r : cand_.ranks)
      for (const Op& op : r.ops)
        if (op.kind == OpKind::kCollective && op.api == rop.api)  // (sends and receives number their calls apart)
          calls_[{op.coll.comm_hash, op.coll.comm_op_index}].emplace_back(r.rank(), &op);
  std::set<std::pair<uint64_t, uint64_t>> keys;
  for (const auto& [rank, op] : ShardsOf(i)) keys.insert({op->coll.comm_hash, op->coll.comm_op_index});
  // Each instance judged; the one whose inputs diverge most (relative to its threshold), else the one whose output
  // does, is reported.
  struct Outcome {
    double rel_in = 0, abs_in = 0, rel_out = 0, ratio_in = 0;
    OperandJudge judge;
    ElementStats stats;
    OpName name, worst;
    std::string detail, plain;
  };
  std::vector<Outcome> outcomes;
  for (const auto& key : keys) {
    const std::vector<std::pair<int, const Op*>>& members = calls_[key];
    for (const auto& m : members) compared_.insert(m.second);
    const Op& c0 = *members[0].second;
    const int p = std::max(c0.coll.comm_size, 1);
    std::string why;
    if (static_cast<int>(members.size()) != p) why = "all-reduce: not every member rank's call was captured";
    for (const auto& [rank, op] : members) {
      if (!why.empty()) break;
      if (op->api != c0.api || op->coll.count != ref_in.size() || op->coll.nccl_dtype != c0.coll.nccl_dtype ||
          op->coll.red_op != c0.coll.red_op || (c0.coll.red_op != 0 && c0.coll.red_op != 4))
        why = "all-reduce not comparable with the reference's (count, type or reduction op)";
      else if (op->tensor(TensorSlot::kSend) == nullptr || op->tensor(TensorSlot::kRecv) == nullptr)
        why = op->MissingTensorsReason();
    }
    if (!why.empty()) {
      rep().AddNotChecked(why);
      continue;
    }
    const DType dt = DTypeFromNccl(c0.coll.nccl_dtype);
    const bool avg = c0.coll.red_op == 4;
    std::vector<double> sum(ref_in.size(), 0), abs_sum(ref_in.size(), 0);
    for (const auto& [rank, op] : members) {
      const std::vector<double> x = DecodeAll(dt, op->tensor(TensorSlot::kSend)->data);
      for (size_t e = 0; e < sum.size() && e < x.size(); ++e) sum[e] += x[e], abs_sum[e] += std::fabs(x[e]);
    }
    if (avg)
      for (double& v : sum) v /= p;
    Outcome o;
    o.name = OpName{members[0].first, c0.seq, c0.api_name()};
    o.worst = o.name;
    o.rel_in = RelFrobenius(sum, ref_in);
    o.abs_in = MaxAbsDiff(sum, ref_in);
    const double eps = Epsilon(dt);
    o.detail = absl::StrCat("no GEMM feeds it (a value the host computed, e.g. a gradient norm): the sum of its ",
                            "inputs over its ", p, " ranks is compared with the reference's input; call #",
                            c0.coll.comm_op_index, " on comm 0x", absl::Hex(c0.coll.comm_hash), "; red_op ",
                            c0.coll.red_op);
    // diff.between only, even with a calibration run: its spread at one value is one sample, and the ratio of two
    // such samples is heavy-tailed (docs/diff.md "Values the host computed").
    o.judge = OperandJudge{2 * max_out_rel_ + eps, eps, "diff.between", "2 x the largest output error before + eps",
                           o.detail};
    o.ratio_in = o.rel_in / o.judge.tau;
    // Inputs that sum to p times the reference's (a data-parallel bucket whose gradients, of per-rank mean losses,
    // were not divided) are said so plainly.
    double off_rel = 0;
    if (o.ratio_in > 1 && p > 1 &&
        ExplainingScale(sum, ref_in, {static_cast<double>(p)}, kScaleExplains, &off_rel) != 1)
      o.plain = absl::StrCat("the sum of its inputs is ", p, " x the reference's",
                             dp_comms_.count(c0.coll.comm_hash) > 0
                                 ? ": a sum where the run's per-rank mean losses need an average; " : "; ");
    const ReduceBound rb(FormatOf(dt), avg ? ReduceOp::kAvg : ReduceOp::kSum, p);
    for (const auto& [rank, op] : members) {
      const std::vector<double> y = DecodeAll(dt, op->tensor(TensorSlot::kRecv)->data);
      const double rel = RelFrobenius(y, ref_out);
      if (rel > o.rel_out) o.rel_out = rel, o.worst = OpName{rank, op->seq, op->api_name()};
      for (size_t e = 0; e < y.size() && e < ref_out.size(); ++e) {
        // |y − y_r| ≤ |y − Σx| + |Σx − x_r| + |x_r − y_r|: the candidate's reduction, the inputs' difference and
        // the reference's one-rank reduction (exact).
        const double bound = rb.Bound({sum[e], abs_sum[e]}) + std::fabs(sum[e] - ref_in[e]) +
                             std::fabs(ref_in[e] - ref_out[e]);
        o.stats.Add(o.stats.elements, y[e], ref_out[e], bound, false);
      }
    }
    rep().AddChecked("diff.allreduce", o.name, o.stats, o.stats.violations == 0 && o.ratio_in <= 1);
    outcomes.push_back(std::move(o));
  }
  if (outcomes.empty()) return;
  const Outcome* worst = &outcomes[0];
  for (const Outcome& o : outcomes)
    if (o.ratio_in > worst->ratio_in ||
        (worst->ratio_in <= 1 && o.stats.worst_ratio > worst->stats.worst_ratio))
      worst = &o;
  const Outcome& o = *worst;
  const double eps = o.judge.eps;
  if (o.ratio_in > 1) {
    Find("diff.between", o.name, rop, "send", "between", o.rel_in, o.abs_in, eps, o.ratio_in, o.judge.tau,
         o.judge.model,
         absl::StrCat(o.plain, "the sum of its inputs differs from the reference's input by ", FormatNumber(o.rel_in),
                      " (relative Frobenius) > ", FormatNumber(o.judge.tau), " (", FormatNumber(o.judge.tau / eps),
                      " eps) = ", o.judge.why),
         o.detail);
  } else {
    FindInsideRecv(rop, o.worst, o.name, o.rel_out, eps, o.stats,
                   "the difference of its inputs' sum plus the reduction's bound", o.detail);
  }
  for (const Outcome& x : outcomes) max_out_rel_ = std::max(max_out_rel_, x.rel_out);
}

}  // namespace ttrace::analyzer::diff_internal
