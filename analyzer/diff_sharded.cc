// Ops are compared in reference order, so "the outputs compared before" an input (diff.between) are those of
// earlier reference ops. A GEMM whose inner dimension is split (row-parallel, or a weight gradient over a
// data-parallel batch split) is compared by the FP64 sum of its partial outputs; the all-reduce that sums them is
// compared in diff_sharded_reduce.cc. Everything is recomputed in FP64 from the captured tensors; nothing is
// shared with simgpu.
#include "analyzer/diff_sharded.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzer/align.h"
#include "analyzer/diff_batched.h"
#include "analyzer/diff_calibrate.h"
#include "analyzer/diff_sharded_state.h"
#include "analyzer/gemm_check.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

double RelFrobenius(const std::vector<double>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  if (den == 0) return num == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

double Epsilon(DType dtype) { return 2 * FormatOf(dtype).u; }

namespace {

// A send or receive of a rank to itself (a one-rank run's all-to-all issued as grouped sends and receives).
bool IsSelfTransfer(const Op& op) {
  const bool p2p = op.api == static_cast<uint16_t>(format::ApiId::kNcclSend) ||
                   op.api == static_cast<uint16_t>(format::ApiId::kNcclRecv);
  return op.kind == OpKind::kCollective && p2p && op.coll.root_or_peer == op.coll.comm_rank;
}

// A sum reduction of the one-rank reference (a copy) whose input holds its GEMM outputs alongside other data or each
// other, not just one GEMM's output: a data-parallel gradient bucket, which a candidate whose GEMMs are sharded packs
// with other counts. (A reduction of one GEMM's output is linked to it and compared; left unaligned, the candidate
// lacks it.)
bool IsOneRankBucket(const std::vector<Op>& ops, size_t i) {
  const Op& op = ops[i];
  if (op.kind != OpKind::kCollective || op.coll.comm_size != 1 || op.coll.red_op != 0) return false;
  const std::vector<DividedSegment> s = RecentGemmSegments(ops, i, {1});
  return s.size() >= 2 || (s.size() == 1 && s[0].length < op.coll.count);
}

}  // namespace

double MaxAbsDiff(const std::vector<double>& got, const std::vector<double>& ref) {
  double m = 0;
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) m = std::max(m, std::fabs(got[i] - ref[i]));
  return m;
}

double ExplainingScale(const std::vector<double>& x, const std::vector<double>& ref, const std::vector<double>& scales,
                       double within, double* rel) {
  double best = 1;
  *rel = RelFrobenius(x, ref);
  for (double s : scales) {
    std::vector<double> y(x);
    for (double& v : y) v /= s;
    const double e = RelFrobenius(y, ref);
    if (e < *rel && e <= within) {
      *rel = e;
      best = s;
    }
  }
  return best;
}

namespace diff_internal {

double Sharded::BestScale(const std::vector<double>& x, const std::vector<double>& r, double* rel) const {
  return ExplainingScale(x, r, scales_, std::max(kScaleExplains, 2 * max_out_rel_), rel);
}

void Sharded::NoteSplit(const GemmSplit& split, const std::vector<Shard>& shards) {
  for (const DimSplit* d : {&split.m, &split.n, &split.k}) {
    if (d->factor == 1) continue;
    for (const Shard& sh : shards) {
      const std::vector<uint64_t> mine = comms_.CommsOf(sh.rank);
      if (d->role < 0 || d->role >= static_cast<int>(mine.size())) continue;
      const uint64_t h = mine[static_cast<size_t>(d->role)];
      if (!roled_.insert(h).second || d != &split.n) continue;
      dp_comms_.insert(h);
      if (std::find(scales_.begin(), scales_.end(), d->factor) == scales_.end()) scales_.push_back(d->factor);
    }
  }
}

void Sharded::NoteCalibrated(const OpName& op, double ratio, double err_eps) {
  CalibrationUse& c = out_->calibration;
  ++c.operands;
  if (ratio <= c.max_ratio) return;
  c.max_ratio = ratio;
  c.max_ratio_err_eps = err_eps;
  c.max_ratio_op = op;
}

void Sharded::Find(const std::string& check, const OpName& op, const Op& rop, const std::string& operand,
                   const std::string& kind, double rel, double abs, double eps, double ratio, double threshold,
                   const std::string& model, const std::string& message, const std::string& detail,
                   const std::string& ref_role) {
  Finding f;
  f.check = check;
  f.rank = op.rank;
  f.seq = op.seq;
  f.api = op.api;
  f.model = model;
  f.max_abs_err = abs;
  f.max_rel_err = rel;
  f.ratio = ratio;
  f.threshold = threshold;
  f.message = absl::StrCat(kind, " divergence at ", operand, " (reference seq ", rop.seq, ref_role, "): ", message,
                           "; error ", FormatNumber(rel / eps), " eps");
  f.detail = detail;
  for (size_t r = 0; r < cand_.ranks.size() && pipeline_.stages > 1; ++r)
    if (cand_.ranks[r].rank() == op.rank)
      absl::StrAppend(&f.detail, "; rank ", op.rank, " is pipeline stage ", pipeline_.stage[r], " of ",
                      pipeline_.stages);
  rep().AddFinding(f);
  Divergence& d = out_->first;
  if (d.valid) return;
  d = Divergence{true, op, static_cast<int64_t>(rop.seq), operand, kind, has_last_, last_, rel / eps, ratio,
                 threshold, model};
}

void Sharded::RepairByContent() {
  const std::vector<Op>& rops = ref_.ranks[0].ops;
  std::map<size_t, absl::StatusOr<LogicalGemm>> decoded;  // reference GEMMs, decoded once
  auto ref_gemm = [&](size_t i) -> const absl::StatusOr<LogicalGemm>& {
    auto it = decoded.find(i);
    if (it == decoded.end()) it = decoded.emplace(i, DecodeLogicalGemm(rops[i])).first;
    return it->second;
  };
  // No split has been chosen yet, so no communicator's role is known: any communicator's size may be a gradient's
  // scale here (only a pairing; each op is judged later with the data-parallel scales alone).
  const std::vector<double>& scales = sizes_;
  auto score = [&](const LogicalGemm& c, const LogicalGemm& r) {
    double ea = 0, eb = 0;
    ExplainingScale(c.a, r.a, scales, kScaleExplains, &ea);
    ExplainingScale(c.b, r.b, scales, kScaleExplains, &eb);
    return ea + eb;
  };
  constexpr double kBetter = 4;
  for (size_t u = 0; u < rops.size(); ++u) {
    if (rops[u].kind != OpKind::kGemm || !ShardsOf(u).empty() || !ref_gemm(u).ok()) continue;
    size_t best_rank = 0, best_j = 0;
    double best = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < cand_.ranks.size(); ++r) {
      const std::vector<Op>& ops = cand_.ranks[r].ops;
      for (size_t j = 0; j < ops.size(); ++j) {
        const int64_t i = align_[r].ref_of_cand[j];
        if (i < 0 || ops[j].kind != OpKind::kGemm || !SameSignature(rops[u], ops[j]) ||
            std::llabs(i - static_cast<int64_t>(u)) > opt_.max_gap || !ref_gemm(static_cast<size_t>(i)).ok())
          continue;
        const absl::StatusOr<LogicalGemm> c = DecodeLogicalGemm(ops[j]);
        if (!c.ok()) continue;
        const double here = score(*c, *ref_gemm(static_cast<size_t>(i))), there = score(*c, *ref_gemm(u));
        if (there * kBetter < here && there < best) best = there, best_rank = r, best_j = j;
      }
    }
    if (best == std::numeric_limits<double>::infinity()) continue;
    RankAlignment& a = align_[best_rank];
    const int64_t was = a.ref_of_cand[best_j];
    a.cand_of_ref[static_cast<size_t>(was)] = -1;
    a.ref_of_cand[best_j] = static_cast<int64_t>(u);
    a.cand_of_ref[u] = static_cast<int64_t>(best_j);
  }
}

bool Sharded::IsLinked(size_t i) const {
  for (const auto& shard : ShardsOf(i))
    if (links_.count(shard) > 0) return true;
  return false;
}

std::vector<std::pair<int, const Op*>> Sharded::ShardsOf(size_t i) const {
  std::vector<std::pair<int, const Op*>> s;
  for (size_t r = 0; r < cand_.ranks.size(); ++r) {
    const int64_t j = align_[r].cand_of_ref[i];
    if (j >= 0) s.emplace_back(cand_.ranks[r].rank(), &cand_.ranks[r].ops[static_cast<size_t>(j)]);
  }
  return s;
}

void Sharded::Run() {
  const std::vector<Op>& rops = ref_.ranks[0].ops;
  pipeline_ = InferPipeline(cand_);
  align_ = AlignPipelined(rops, cand_, pipeline_, opt_.max_gap, &opt_.mapping.owns);
  RepairByContent();
  for (const auto& [rank, ranges] : opt_.mapping.owns) {
    bool present = false;
    for (const RankTrace& r : cand_.ranks) present = present || r.rank() == rank;
    if (!present) rep().AddGap(absl::StrCat("the mapping file names rank ", rank, ", which the candidate does not have"));
  }
  uint64_t ref_unaligned = 0;
  std::vector<std::string> unaligned;
  std::vector<bool> folded_ref(rops.size(), false);
  for (size_t i = 0; i < rops.size(); ++i) {
    if (ShardsOf(i).empty()) {
      // A copy within the reference (its own sends, a gradient bucket reduced on its group of one that no candidate
      // bucket aligns with: the candidate's hold sharded gradients): its data is compared where it is read next.
      const bool bucket = IsOneRankBucket(rops, i);  // scans the reduction's input: once
      if (bucket && CompareBucket(i, rops[i])) continue;
      if (IsSelfTransfer(rops[i]) || bucket) {
        rep().AddChecked("diff.folded", {}, ElementStats{}, true);
        continue;
      }
      ++ref_unaligned;
      if (unaligned.size() < 5)
        unaligned.push_back(absl::StrCat("reference seq ", rops[i].seq, " ", SignatureText(rops[i])));
      rep().AddNotChecked("reference op not aligned");
      continue;
    }
    if (rops[i].kind == OpKind::kGemm && IsPerEntryBatched(rops[i])) {
      CompareBatched(i, rops[i]);
    } else if (rops[i].kind == OpKind::kGemm) {
      CompareGemm(i, rops[i]);
      CompareUnalignedReductions(i, rops[i]);
    } else if (rops[i].api == static_cast<uint16_t>(format::ApiId::kNcclAllReduce)) {
      const bool linked = IsLinked(i);
      bool other_count = false;
      for (const auto& shard : ShardsOf(i)) other_count = other_count || shard.second->coll.count != rops[i].coll.count;
      // A bucket of sharded gradients holds other counts than the reference's: compared segment by segment (each
      // reference GEMM output against its candidate shards), else its data is compared where it is read next
      // (below). With equal counts (data parallelism alone) it is compared as a value.
      if (linked) CompareReduce(ShardsOf(i), rops[i], nullptr);
      else if (other_count && IsOneRankBucket(rops, i)) folded_ref[i] = !CompareBucket(i, rops[i]);
      else CompareValueReduce(i, rops[i]);
    } else if (rops[i].api == static_cast<uint16_t>(format::ApiId::kNcclReduceScatter) && IsLinked(i)) {
      // A reduce-scatter of a GEMM's partial outputs (FSDP's gradient reduction): compared like an all-reduce.
      CompareReduce(ShardsOf(i), rops[i], nullptr);
    } else if (rops[i].kind == OpKind::kCollective) {
      // A collective with no rule of its own (an all-gather of routing counts, a broadcast, sends and receives):
      // its candidate counterparts are judged where their outputs are read next, as unaligned ones are (below).
      folded_ref[i] = true;
    } else {
      rep().AddNotChecked("no diff rule for this API");
    }
  }
  // Collectives the one-rank reference does not issue (it has no peers), and those it issues with no rule of their
  // own: their outputs are judged where they are read next, at the inputs of the next compared GEMM (diff.between).
  uint64_t unaligned_n = 0, folded = 0;
  for (size_t r = 0; r < cand_.ranks.size(); ++r) {
    const std::vector<Op>& ops = cand_.ranks[r].ops;
    for (size_t j = 0; j < ops.size(); ++j) {
      const int64_t i = align_[r].ref_of_cand[j];
      if ((i >= 0 && !folded_ref[static_cast<size_t>(i)]) || compared_.count(&ops[j]) > 0) continue;
      if (ops[j].kind == OpKind::kCollective) {
        ++folded;
        continue;
      }
      ++unaligned_n;
      if (unaligned.size() < 5)
        unaligned.push_back(absl::StrCat("rank ", cand_.ranks[r].rank(), " seq ", ops[j].seq, " ",
                                         SignatureText(ops[j])));
    }
  }
  for (uint64_t x = 0; x < folded; ++x) rep().AddChecked("diff.folded", {}, ElementStats{}, true);
  if (unaligned_n > 0) rep().AddNotChecked("candidate op not aligned", unaligned_n);
  if (unaligned_n + ref_unaligned > 0)
    rep().AddGap(absl::StrCat(unaligned_n, " candidate and ", ref_unaligned,
                              " reference ops could not be aligned (first: ", absl::StrJoin(unaligned, "; "), ")"));
}

void Sharded::CompareUnalignedReductions(size_t i, const Op& rop) {
  auto oc = outcomes_.find(i);
  if (oc == outcomes_.end() || oc->second.split.k.factor == 1) return;
  std::vector<std::pair<int, const Op*>> shards;
  for (const auto& [key, link] : links_) {
    if (link.gemm_ref != static_cast<int64_t>(i) || !link.same_data || !IsOutputReduction(*key.second)) continue;
    for (size_t r = 0; r < cand_.ranks.size(); ++r)
      if (cand_.ranks[r].rank() == key.first &&
          align_[r].ref_of_cand[static_cast<size_t>(key.second - cand_.ranks[r].ops.data())] < 0)
        shards.push_back(key);
  }
  // Only reductions fed by the GEMM's output itself on every rank (found by data, not by count).
  if (shards.empty() || shards.size() != ShardsOf(i).size()) return;
  for (const auto& sh : shards) compared_.insert(sh.second);
  CompareReduce(shards, rop, &oc->second.ref_c);
}

namespace {

GemmProblem ProblemOf(const LogicalGemm& g) {
  GemmProblem p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.alpha = g.alpha;
  p.beta = g.beta;
  p.a = g.a;
  p.b = g.b;
  p.c_in = g.c_in;
  return p;
}

// Merges the blocks of one operand: rows split pr ways by coordinate `ri`, columns pc ways by `ci`. False when a
// block is missing.
template <typename RowCoord, typename ColCoord, typename Data>
bool Merge(const std::vector<Shard>& shards, int64_t rows, int64_t cols, const DimSplit& rs, const DimSplit& cs,
           RowCoord ri, ColCoord ci, Data data, std::vector<double>* full) {
  const int pr = rs.factor, pc = cs.factor;
  full->assign(static_cast<size_t>(rows * pr * cols * pc), 0);
  std::vector<bool> seen(static_cast<size_t>(pr * pc), false);
  for (const Shard& s : shards) {
    const int bi = ri(s), bj = ci(s);
    if (seen[static_cast<size_t>(bi + bj * pr)]) continue;
    seen[static_cast<size_t>(bi + bj * pr)] = true;
    PlaceBlock(data(s), rows, cols, bi, bj, rs, cs, full);
  }
  for (bool b : seen)
    if (!b) return false;
  return true;
}

}  // namespace

void Sharded::CompareGemm(size_t i, const Op& rop) {
  absl::StatusOr<LogicalGemm> r = DecodeLogicalGemm(rop);
  if (!r.ok()) return rep().AddNotChecked(absl::StrCat("reference: ", r.status().message()));
  std::vector<Shard> shards;
  for (const auto& [rank, op] : ShardsOf(i)) {
    absl::StatusOr<LogicalGemm> g = DecodeLogicalGemm(*op);
    if (!g.ok()) return rep().AddNotChecked(std::string(g.status().message()));
    if (!shards.empty() && (g->m != shards[0].g.m || g->n != shards[0].g.n || g->k != shards[0].g.k))
      return rep().AddNotChecked("shards of different shapes");
    shards.push_back(Shard{rank, op, std::move(*g)});
  }
  const GemmShape rs{r->m, r->n, r->k, 1}, cs{shards[0].g.m, shards[0].g.n, shards[0].g.k, 1};
  std::vector<GemmSplit> splits;
  auto mapped = opt_.mapping.ops.find(rop.seq);
  if (mapped != opt_.mapping.ops.end()) {
    GemmSplit s = mapped->second;
    if (ResolveRoles(comms_, shards[0].rank, &s)) splits.push_back(s);
  }
  else splits = CandidateSplits(rs, cs, comms_, shards[0].rank);
  // The assignment of communicators to dimensions that reproduces the reference's inputs best.
  double best_score = std::numeric_limits<double>::infinity();
  GemmSplit split;
  std::vector<double> a, b;
  double sa = 1, sb = 1, rel_a = 0, rel_b = 0;
  for (const GemmSplit& s : splits) {
    bool ok = true;
    for (Shard& sh : shards) ok = ok && ShardCoords(s, comms_, sh.rank, &sh.cm, &sh.cn, &sh.ck);
    std::vector<double> ma, mb;
    if (!ok || !Merge(shards, cs.m, cs.k, s.m, s.k, [](const Shard& x) { return x.cm; },
                      [](const Shard& x) { return x.ck; }, [](const Shard& x) -> const auto& { return x.g.a; }, &ma) ||
        !Merge(shards, cs.k, cs.n, s.k, s.n, [](const Shard& x) { return x.ck; },
               [](const Shard& x) { return x.cn; }, [](const Shard& x) -> const auto& { return x.g.b; }, &mb))
      continue;
    double ea, eb;
    const double ta = BestScale(ma, r->a, &ea), tb = BestScale(mb, r->b, &eb);
    if (ea + eb < best_score) {
      best_score = ea + eb;
      split = s;
      a = std::move(ma);
      b = std::move(mb);
      sa = ta;
      sb = tb;
      rel_a = ea;
      rel_b = eb;
    }
  }
  if (a.empty() && r->m * r->k > 0) return rep().AddNotChecked("no shard layout fits");
  for (Shard& sh : shards) ShardCoords(split, comms_, sh.rank, &sh.cm, &sh.cn, &sh.ck);
  NoteSplit(split, shards);
  for (double& v : a) v /= sa;
  for (double& v : b) v /= sb;
  const OpName name{shards[0].rank, shards[0].op->seq, shards[0].op->api_name()};
  const double eps_out = Epsilon(r->c_type);
  std::string detail = absl::StrCat(SplitText(split), " (", split.source, ")");
  if (sa != 1 || sb != 1)
    absl::StrAppend(&detail, "; inputs scaled by ", sa, " and ", sb,
                    " (gradients of a data-parallel run whose losses are per-rank means)");
  MergedInputs in{a, b, sa, sb, rel_a, rel_b, name, name};
  for (const bool operand_a : {true, false}) {
    const Shard* at = &shards[0];
    double& rel = operand_a ? in.rel_a : in.rel_b;
    rel = std::max(rel, WorstReplicaError(*r, shards, split, operand_a, operand_a ? sa : sb, &at));
    (operand_a ? in.at_a : in.at_b) = OpName{at->rank, at->op->seq, at->op->api_name()};
  }
  bool between = JudgeOperands(i, rop, *r, shards, split, in, name, detail);
  const int64_t m = r->m, n = r->n, k = r->k;
  const std::vector<double> prop = PropagationTerms(*r, shards, split, sa, sb);
  GemmOutcome oc;
  oc.split = split;
  oc.m = m;
  oc.n = n;
  oc.bm = cs.m;
  oc.bn = cs.n;
  oc.scale = sa * sb;
  oc.ref_c = r->c;
  oc.name = name;
  oc.bound.assign(prop.size(), 0);
  oc.abs_partials.assign(prop.size(), 0);
  oc.partial_sum.assign(prop.size(), 0);
  const std::vector<GemmElementTerms> rt = GemmReference(ProblemOf(*r));
  const GemmBound rb(r->precision, k, r->alpha, r->beta);
  for (size_t x = 0; x < prop.size(); ++x) {
    oc.bound[x] = std::fabs(r->alpha) * prop[x] + rb.Bound(rt[x]);
  }
  std::vector<double> beta_c0(prop.size(), 0);  // Σ over the shards of β_s·C0_s (accumulating GEMMs: C += A·B)
  std::map<std::tuple<int, int, int>, bool> done;
  for (const Shard& s : shards) {
    if (!done.emplace(std::make_tuple(s.cm, s.cn, s.ck), true).second) continue;
    const std::vector<GemmElementTerms> st = GemmReference(ProblemOf(s.g));
    const GemmBound sbd(s.g.precision, s.g.k, s.g.alpha, s.g.beta);
    for (int64_t j = 0; j < cs.n; ++j)
      for (int64_t x = 0; x < cs.m; ++x) {
        const size_t local = static_cast<size_t>(x + j * cs.m);
        const size_t full =
            static_cast<size_t>(FullIndex(split.m, cs.m, s.cm, x) + FullIndex(split.n, cs.n, s.cn, j) * m);
        oc.bound[full] += sbd.Bound(st[local]) / oc.scale;
        oc.partial_sum[full] += s.g.c[local];
        oc.abs_partials[full] += std::fabs(s.g.c[local]);
        if (!s.g.c_in.empty()) beta_c0[full] += s.g.beta * s.g.c_in[local] / oc.scale;
      }
  }
  between = JudgeAccumulator(rop, *r, beta_c0, name, detail, between, &oc.bound);
  ElementStats stats;
  std::vector<double> got(prop.size());
  for (size_t x = 0; x < got.size(); ++x) {
    got[x] = oc.partial_sum[x] / oc.scale;
    stats.Add(x, got[x], r->c[x], oc.bound[x], false);
  }
  const double rel_c = RelFrobenius(got, r->c);
  rep().AddChecked("diff.gemm", name, stats, stats.violations == 0);
  if (stats.violations > 0) {
    const int64_t row = static_cast<int64_t>(stats.worst_index % static_cast<uint64_t>(m));
    const int64_t col = static_cast<int64_t>(stats.worst_index / static_cast<uint64_t>(m));
    OpName at = name;
    for (const Shard& s : shards)
      if (s.cm == CoordOfFull(split.m, cs.m, row) && s.cn == CoordOfFull(split.n, cs.n, col)) {
        at = {s.rank, s.op->seq, s.op->api_name()};
        break;
      }
    Find("diff.inside", at, rop, split.k.factor > 1 ? "C (sum of partial outputs)" : "C", "inside", rel_c,
         stats.max_abs_err, eps_out,
         stats.worst_ratio, stats.worst_bound, "diff.propagation",
         absl::StrCat(stats.violations, " of ", stats.elements, " elements differ from the reference beyond what the ",
                      "input differences and round-off allow; worst at row ", row, " col ", col),
         detail);
  } else if (!between) {
    has_last_ = true;
    last_ = name;
  }
  max_out_rel_ = std::max(max_out_rel_, rel_c);
  outcomes_[i] = std::move(oc);
  LinkOutputs(i, shards);
}

}  // namespace diff_internal

void RunShardedDiff(const TraceSet& ref, const TraceSet& cand, const DiffOptions& options, DiffResult* out) {
  diff_internal::Sharded(ref, cand, options, out).Run();
}

}  // namespace ttrace::analyzer
