// All-gathers judged at their reference counterpart, for the sharded diff (diff_sharded_state.h). A one-rank
// reference issues no all-gather, but when a candidate GEMM's operand is, bitwise, the output of an all-gather on
// the same rank (a sequence-parallel gather before a column-parallel linear), the reference GEMM's operand, cut to
// that shard by the GEMM's split, is what the gather should have produced. The gather is compared there under the
// operand's threshold (diff.between or diff.calibrated) and counted checked as diff.allgather. When it diverges,
// it is the first divergence, not the GEMM that reads it: an all-gather only copies, so its output is its inputs
// (chunk c from comm rank c, NCCL's layout; `ttrace check` verifies the copy). If every input matches some chunk
// of the reference within the threshold and the output does not, the gather put right data in the wrong places:
// inside (a communicator whose rank order is not the layout's). If an input matches no chunk, it already differed:
// between, at the gather's input. A gather whose output reaches a GEMM only through host code (a distributed
// optimizer's weight gather, copied into the parameters and rounded) is found by content when an operand of a GEMM
// diverges: JudgeContainingGather.
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/diff_calibrate.h"
#include "analyzer/diff_sharded.h"
#include "analyzer/diff_sharded_state.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer::diff_internal {

using format::TensorSlot;

namespace {

// The block (bi, bj) of a full column-major matrix split as PlaceBlock places it: the inverse of PlaceBlock.
std::vector<double> TakeBlock(const std::vector<double>& full, int64_t rows, int64_t cols, int bi, int bj,
                              const DimSplit& rs, const DimSplit& cs) {
  std::vector<double> block(static_cast<size_t>(rows * cols));
  const int64_t full_rows = rows * rs.factor;
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t fj = FullIndex(cs, cols, bj, j);
    for (int64_t i = 0; i < rows; ++i) block[i + j * rows] = full[FullIndex(rs, rows, bi, i) + fj * full_rows];
  }
  return block;
}

std::vector<double> Chunk(const std::vector<double>& v, size_t c, size_t len) {
  return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(c * len),
                             v.begin() + static_cast<std::ptrdiff_t>((c + 1) * len));
}

// Matches each of the p chunks of `got` (the gather's inputs in comm-rank order) with the chunk of `want` nearest
// to it; the first input that matches none within `tau`, or p when each matches a chunk of its own. Two inputs that
// match the same chunk (a shard cut at another rank's place) are not a reordering: the one out of its place is
// the input that differs (the first of them when neither is in place). `text` says which matched which.
size_t MatchChunks(const std::vector<double>& got, const std::vector<double>& want, size_t p, double tau,
                   std::string* text) {
  const size_t len = got.size() / p;
  size_t bad = p;
  std::vector<size_t> match(p, p), uses(p, 0);
  text->clear();
  for (size_t c = 0; c < p; ++c) {
    double best = std::numeric_limits<double>::infinity();
    size_t best_j = 0;
    for (size_t j = 0; j < p; ++j) {
      const double e = RelFrobenius(Chunk(got, c, len), Chunk(want, j, len));
      if (e < best) best = e, best_j = j;
    }
    if (best <= tau) ++uses[match[c] = best_j];
    if (best > tau && bad == p) bad = c;
    absl::StrAppend(text, c > 0 ? ", " : "", "comm rank ", c, " -> ",
                    best <= tau ? absl::StrCat("chunk ", best_j) : std::string("none"));
  }
  for (size_t c = 0; c < p && bad == p; ++c)
    if (uses[match[c]] > 1 && match[c] != c) bad = c;
  for (size_t c = 0; c < p && bad == p; ++c)
    if (uses[match[c]] > 1) bad = c;
  return bad;
}

bool IsAllGather(const Op& op) {
  return op.kind == OpKind::kCollective && op.api == static_cast<uint16_t>(format::ApiId::kNcclAllGather);
}

// The offsets at which `v` lies in `g` within one rounding to v's type (|v_e − g_e| ≤ eps·|g_e|, exact for a
// zero), at most two: a second one makes the position ambiguous (constant or repeated data) and the caller
// gives up.
std::vector<size_t> FindRounded(const std::vector<double>& g, const std::vector<double>& v, double eps) {
  std::vector<size_t> found;
  if (v.empty() || v.size() > g.size()) return found;
  auto near = [eps](double x, double ref) { return std::fabs(x - ref) <= eps * std::fabs(ref); };
  for (size_t off = 0; off + v.size() <= g.size() && found.size() < 2; ++off) {
    if (!near(v[0], g[off])) continue;
    size_t e = 1;
    while (e < v.size() && near(v[e], g[off + e])) ++e;
    if (e == v.size()) found.push_back(off);
  }
  return found;
}

}  // namespace

std::vector<double> PropagationTerms(const LogicalGemm& r, const std::vector<Shard>& shards, const GemmSplit& split,
                                     double sa, double sb) {
  std::vector<double> prop(static_cast<size_t>(r.m * r.n), 0);
  std::set<std::tuple<int, int, int>> done;
  for (const Shard& s : shards) {
    if (!done.emplace(s.cm, s.cn, s.ck).second) continue;
    const int64_t ml = s.g.m, nl = s.g.n, kl = s.g.k;
    std::vector<int64_t> fm(static_cast<size_t>(ml)), fn(static_cast<size_t>(nl)), fk(static_cast<size_t>(kl));
    for (int64_t x = 0; x < ml; ++x) fm[x] = FullIndex(split.m, ml, s.cm, x);
    for (int64_t j = 0; j < nl; ++j) fn[j] = FullIndex(split.n, nl, s.cn, j);
    for (int64_t l = 0; l < kl; ++l) fk[l] = FullIndex(split.k, kl, s.ck, l);
    std::vector<double> da(static_cast<size_t>(ml * kl)), ra(da.size());
    for (int64_t l = 0; l < kl; ++l)
      for (int64_t x = 0; x < ml; ++x) {
        const double ar = r.a[fm[x] + fk[l] * r.m];
        ra[x + l * ml] = std::fabs(ar);
        da[x + l * ml] = std::fabs(s.g.a[x + l * ml] / sa - ar);
      }
    for (int64_t j = 0; j < nl; ++j)
      for (int64_t l = 0; l < kl; ++l) {
        const double bs = s.g.b[l + j * kl] / sb, bc = std::fabs(bs), db = std::fabs(bs - r.b[fk[l] + fn[j] * r.k]);
        double* out = &prop[fn[j] * r.m];
        for (int64_t x = 0; x < ml; ++x) out[fm[x]] += da[x + l * ml] * bc + ra[x + l * ml] * db;
      }
  }
  return prop;
}

double WorstReplicaError(const LogicalGemm& r, const std::vector<Shard>& shards, const GemmSplit& split,
                         bool operand_a, double scale, const Shard** at) {
  std::map<std::pair<int, int>, double> worst;  // per block: the largest squared error among its copies
  double largest = -1;
  for (const Shard& s : shards) {
    const int64_t rows = operand_a ? s.g.m : s.g.k, cols = operand_a ? s.g.k : s.g.n;
    const int bi = operand_a ? s.cm : s.ck, bj = operand_a ? s.ck : s.cn;
    const std::vector<double> want = TakeBlock(operand_a ? r.a : r.b, rows, cols, bi, bj,
                                               operand_a ? split.m : split.k, operand_a ? split.k : split.n);
    const std::vector<double>& got = operand_a ? s.g.a : s.g.b;
    double e = 0;
    for (size_t x = 0; x < want.size(); ++x) e += (got[x] / scale - want[x]) * (got[x] / scale - want[x]);
    double& w = worst[{bi, bj}];
    w = std::max(w, e);
    if (e > largest) largest = e, *at = &s;
  }
  double num = 0, den = 0;
  for (const auto& [block, e] : worst) num += e;
  for (double v : operand_a ? r.a : r.b) den += v * v;
  if (den == 0) return num == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

const Op* Sharded::RefOf(int rank, const Op* op) const {
  for (size_t r = 0; r < cand_.ranks.size(); ++r) {
    const std::vector<Op>& ops = cand_.ranks[r].ops;
    if (cand_.ranks[r].rank() != rank || op < ops.data() || op >= ops.data() + ops.size()) continue;
    const int64_t i = align_[r].ref_of_cand[static_cast<size_t>(op - ops.data())];
    return i >= 0 ? &ref_.ranks[0].ops[static_cast<size_t>(i)] : nullptr;
  }
  return nullptr;
}

std::string Sharded::CommRankText(const Op& collective, size_t comm_rank) const {
  for (const RankTrace& r : cand_.ranks)
    if (comms_.CoordOf(r.rank(), collective.coll.comm_hash) == static_cast<int>(comm_rank))
      return absl::StrCat("comm rank ", comm_rank, " (rank ", r.rank(), ")");
  return absl::StrCat("comm rank ", comm_rank);
}

bool Sharded::JudgeAccumulator(const Op& rop, const LogicalGemm& r, const std::vector<double>& beta_c0,
                               const OpName& name, const std::string& detail, bool between,
                               std::vector<double>* bound) {
  std::vector<double> want(beta_c0.size(), 0);
  for (size_t x = 0; x < want.size() && !r.c_in.empty(); ++x) want[x] = r.beta * r.c_in[x];
  bool any = false;
  for (size_t x = 0; x < want.size(); ++x) {
    (*bound)[x] += std::fabs(beta_c0[x] - want[x]);
    any = any || beta_c0[x] != 0 || want[x] != 0;
  }
  if (!any || between) return between;
  const double eps = Epsilon(r.c_type), tau = 2 * max_out_rel_ + eps, rel = RelFrobenius(beta_c0, want);
  if (rel <= tau) return false;
  Find("diff.between", name, rop, "C0", "between", rel, MaxAbsDiff(beta_c0, want), eps, rel / tau, tau,
       "diff.between",
       absl::StrCat("input beta x C0 (summed over the shards) differs from the reference's by ", FormatNumber(rel),
                    " (relative Frobenius) > ", FormatNumber(tau), " = 2 x the largest output error before + eps"),
       detail);
  return true;
}

const Op* Sharded::GatherFeeding(const Shard& s, bool operand_a) const {
  const format::GemmRecord& g = s.op->gemm;
  if (g.batch_count > 1) return nullptr;  // one matrix: stored as the logical operand or as its transpose
  const Tensor* t = s.op->tensor(operand_a ? TensorSlot::kA : TensorSlot::kB);
  for (const RankTrace& r : cand_.ranks) {
    if (r.rank() != s.rank || t == nullptr) continue;
    const size_t at = static_cast<size_t>(s.op - r.ops.data());
    for (size_t j = at; j-- > 0 && at - j <= static_cast<size_t>(opt_.max_gap);) {
      const Tensor* recv = IsAllGather(r.ops[j]) ? r.ops[j].tensor(TensorSlot::kRecv) : nullptr;
      if (recv != nullptr && recv->data == t->data) return &r.ops[j];
    }
  }
  return nullptr;
}

bool Sharded::JudgeOperands(size_t i, const Op& rop, const LogicalGemm& r, const std::vector<Shard>& shards,
                            const GemmSplit& split, const MergedInputs& in, const OpName& name,
                            const std::string& detail) {
  const double eps_in = Epsilon(r.ab_type);
  const double tau_between = 2 * max_out_rel_ + eps_in;
  const OperandSpread* spread = opt_.calibration != nullptr ? &opt_.calibration->spread[i] : nullptr;
  bool between = false;
  for (const bool operand_a : {true, false}) {
    const char* operand = operand_a ? "A" : "B";
    const double rel = operand_a ? in.rel_a : in.rel_b;
    OperandJudge j{tau_between, eps_in, "diff.between", "2 x the largest output error before + eps", detail};
    const double s = spread == nullptr ? -1 : operand_a ? spread->a : spread->b;
    if (s >= 0) {
      const double cal = CalibratedThreshold(opt_.calibration_multiple, s, eps_in / 2);
      NoteCalibrated(name, rel / cal, rel / eps_in);
      if (cal < j.tau) {
        j.tau = cal;
        j.model = "diff.calibrated";
        j.why = absl::StrCat(FormatNumber(opt_.calibration_multiple), " x the calibration run's spread (",
                             FormatNumber(s / eps_in), " eps) + u");
      }
    }
    const bool diverges = !between && rel > j.tau;
    const bool at_gather =
        JudgeGathers(rop, shards, split, operand_a, {r.m, r.n, r.k, 1}, operand_a ? r.a : r.b,
                     operand_a ? in.sa : in.sb, j, diverges) ||
        (diverges && JudgeContainingGather(rop, shards, split, operand_a, operand_a ? r.a : r.b,
                                           operand_a ? in.sa : in.sb, j));
    if (at_gather || !diverges) {
      between = between || diverges;
      continue;
    }
    between = true;
    Find("diff.between", operand_a ? in.at_a : in.at_b, rop, operand, "between", rel,
         MaxAbsDiff(operand_a ? in.a : in.b, operand_a ? r.a : r.b), eps_in, rel / j.tau, j.tau, j.model,
         absl::StrCat("input ", operand, " differs from the reference's by ", FormatNumber(rel),
                      " (relative Frobenius) > ", FormatNumber(j.tau), " (", FormatNumber(j.tau / eps_in), " eps) = ",
                      j.why),
         detail);
  }
  return between;
}

bool Sharded::JudgeGathers(const Op& rop, const std::vector<Shard>& shards, const GemmSplit& split, bool operand_a,
                           const GemmShape& rshape, const std::vector<double>& ref_full, double scale,
                           const OperandJudge& judge,
                           bool diverged) {
  bool reported = false;
  for (const Shard& s : shards) {
    const Op* gather = GatherFeeding(s, operand_a);
    if (gather == nullptr || compared_.count(gather) > 0) continue;
    compared_.insert(gather);
    const int64_t rows = operand_a ? s.g.m : s.g.k, cols = operand_a ? s.g.k : s.g.n;
    const DimSplit& rs = operand_a ? split.m : split.k;
    const DimSplit& cs = operand_a ? split.k : split.n;
    const int bi = operand_a ? s.cm : s.ck, bj = operand_a ? s.ck : s.cn;
    // Compared in the operand's stored order (the gather's): transposed when op() transposes it.
    const bool trans = (operand_a ? s.op->gemm.transa : s.op->gemm.transb) != 0;
    const auto stored = [&](std::vector<double> v) { return OpFolded(v, rows, cols, 1, trans); };
    const std::vector<double> want = stored(TakeBlock(ref_full, rows, cols, bi, bj, rs, cs));
    std::vector<double> got = stored(operand_a ? s.g.a : s.g.b);
    for (double& v : got) v /= scale;
    const double rel = RelFrobenius(got, want);
    const OpName name{s.rank, gather->seq, gather->api_name()};
    ElementStats stats;
    stats.elements = got.size();
    rep().AddChecked("diff.allgather", name, stats, rel <= judge.tau);
    if (rel <= judge.tau || !diverged || reported) continue;
    reported = true;
    // Which reference chunk each input (comm rank c's chunk of the output) matches, under the inferred split or,
    // since a gather in the wrong order also misleads the split inference (which communicator, how many groups),
    // under any split the shapes allow.
    const size_t p = static_cast<size_t>(std::max(gather->coll.comm_size, 1));
    std::string inputs;
    size_t bad = MatchChunks(got, want, p, judge.tau, &inputs);
    for (const GemmSplit& alt : CandidateSplits(rshape, GemmShape{s.g.m, s.g.n, s.g.k, 1}, comms_, s.rank)) {
      int cm = 0, cn = 0, ck = 0;
      if (bad == p || !ShardCoords(alt, comms_, s.rank, &cm, &cn, &ck)) continue;
      std::string text;
      const std::vector<double> w = stored(TakeBlock(ref_full, rows, cols, operand_a ? cm : ck, operand_a ? ck : cn,
                                                     operand_a ? alt.m : alt.k, operand_a ? alt.k : alt.n));
      if (MatchChunks(got, w, p, judge.tau, &text) == p) {
        bad = p;
        inputs = absl::StrCat(text, " (under split ", SplitText(alt), ")");
      }
    }
    const bool inside = bad == p;
    const std::string detail = absl::StrCat(judge.detail, "; output of rank ", s.rank, "'s all-gather is operand ",
                                            operand_a ? "A" : "B", " of rank ", s.rank, " seq ", s.op->seq,
                                            "; its inputs against the reference's chunks: ", inputs);
    const Op* gref = RefOf(s.rank, gather);
    Find(inside ? "diff.inside" : "diff.between", name, gref != nullptr ? *gref : rop, inside ? "recv" : "send",
         inside ? "inside" : "between", rel, MaxAbsDiff(got, want), judge.eps, rel / judge.tau, judge.tau, judge.model,
         inside ? absl::StrCat("its inputs match the reference's chunks (", judge.why, ") but its output places them ",
                               "elsewhere: the all-gather's rank order is not the layout's")
                : absl::StrCat("its input from ", CommRankText(*gather, bad), " is not the reference's chunk ", bad,
                               " (", judge.why, ")"),
         detail, gref != nullptr ? "" : ", which reads its output");
  }
  return reported;
}

bool Sharded::JudgeContainingGather(const Op& rop, const std::vector<Shard>& shards, const GemmSplit& split,
                                    bool operand_a, const std::vector<double>& ref_full, double scale,
                                    const OperandJudge& judge) {
  // The shard whose block differs most, and the reference's values of that block.
  const Shard* worst = nullptr;
  double worst_rel = -1;
  std::vector<double> want;
  for (const Shard& s : shards) {
    const int64_t rows = operand_a ? s.g.m : s.g.k, cols = operand_a ? s.g.k : s.g.n;
    std::vector<double> w = TakeBlock(ref_full, rows, cols, operand_a ? s.cm : s.ck, operand_a ? s.ck : s.cn,
                                      operand_a ? split.m : split.k, operand_a ? split.k : split.n);
    std::vector<double> got = operand_a ? s.g.a : s.g.b;
    for (double& v : got) v /= scale;
    const double rel = RelFrobenius(got, w);
    if (rel > worst_rel) worst_rel = rel, worst = &s, want = std::move(w);
  }
  if (worst == nullptr || !(worst_rel > judge.tau)) return false;
  // The operand as stored (packed, column-major rows x cols; op() transposes it when trans): one matrix, so a
  // batched GEMM only for its shared A.
  const format::GemmRecord& g = worst->op->gemm;
  const Tensor* t = worst->op->tensor(operand_a ? TensorSlot::kA : TensorSlot::kB);
  if (t == nullptr || (g.batch_count > 1 && !(operand_a && (g.stride_a == 0 || t->meta.batch == 1)))) return false;
  const bool trans = (operand_a ? g.transa : g.transb) != 0;
  const int64_t rows = t->meta.rows, cols = t->meta.cols;
  const int64_t lrows = trans ? cols : rows;  // logical rows
  if (static_cast<int64_t>(want.size()) != rows * cols) return false;
  std::vector<double> stored = DecodeAll(static_cast<format::DType>(t->meta.dtype), t->data);
  if (static_cast<int64_t>(stored.size()) < rows * cols) return false;
  stored.resize(static_cast<size_t>(rows * cols));
  std::vector<double> want_stored(stored.size());  // the reference's values in the operand's stored order
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t x = trans ? c : r, l = trans ? r : c;  // logical (row, column)
      want_stored[static_cast<size_t>(r + c * rows)] = want[static_cast<size_t>(x + l * lrows)];
    }
  // The most recent all-gathers on the operand's rank (four at most: the weight gather precedes the step that
  // reads the weights) whose output holds the operand as stored, at one position.
  const double eps = Epsilon(static_cast<format::DType>(t->meta.dtype));
  const Op* gather = nullptr;
  size_t off = 0;
  for (const RankTrace& rt : cand_.ranks) {
    if (rt.rank() != worst->rank) continue;
    int seen = 0;
    for (size_t j = static_cast<size_t>(worst->op - rt.ops.data()); j-- > 0 && seen < 4 && gather == nullptr;) {
      const Tensor* recv = IsAllGather(rt.ops[j]) ? rt.ops[j].tensor(TensorSlot::kRecv) : nullptr;
      if (recv == nullptr || !IsFloatDType(static_cast<format::DType>(recv->meta.dtype))) continue;
      ++seen;
      auto it = gathered_.find(&rt.ops[j]);
      if (it == gathered_.end())
        it = gathered_.emplace(&rt.ops[j], DecodeAll(static_cast<format::DType>(recv->meta.dtype), recv->data)).first;
      const std::vector<size_t> at = FindRounded(it->second, stored, eps);
      if (at.size() == 1) gather = &rt.ops[j], off = at[0];
    }
  }
  if (gather == nullptr || compared_.count(gather) > 0) return false;
  compared_.insert(gather);
  const std::vector<double>& out = gathered_[gather];
  const size_t p = static_cast<size_t>(std::max(gather->coll.comm_size, 1)), len = out.size() / p;
  // The operand's elements piece by piece, a piece per output chunk it spans (chunk c: comm rank c's input).
  // Each piece is also read from every other chunk at the same place: when the reference's values are there,
  // the gather placed right data in the wrong chunk.
  double den = 0, own = 0, best = 0, worst_piece = -1;
  size_t bad_chunk = 0;
  std::string where;
  bool moved = false;
  for (size_t e0 = 0; e0 < stored.size();) {
    const size_t c = (off + e0) / len, e1 = std::min(stored.size(), (c + 1) * len - off);
    double piece_den = 0;
    std::vector<double> err(p, 0);
    for (size_t e = e0; e < e1; ++e) {
      piece_den += want_stored[e] * want_stored[e];
      for (size_t j = 0; j < p; ++j) {
        const double d = out[off + e + j * len - c * len] / scale - want_stored[e];
        err[j] += d * d;
      }
    }
    const size_t bj = static_cast<size_t>(std::min_element(err.begin(), err.end()) - err.begin());
    den += piece_den;
    own += err[c];
    best += err[bj];
    moved = moved || (bj != c && err[bj] < err[c]);
    const double rel = piece_den > 0 ? std::sqrt(err[c] / piece_den) : err[c] > 0 ? INFINITY : 0;
    if (rel > worst_piece) worst_piece = rel, bad_chunk = c;
    absl::StrAppend(&where, e0 > 0 ? ", " : "", "elements ", off + e0, "..", off + e1 - 1, " (chunk ", c, ") ",
                    bj == c ? std::string("in place") : absl::StrCat("found in chunk ", bj));
    e0 = e1;
  }
  const double rel = den > 0 ? std::sqrt(own / den) : 0, rel_moved = den > 0 ? std::sqrt(best / den) : 0;
  const bool inside = moved && rel_moved <= judge.tau;
  const OpName name{worst->rank, gather->seq, gather->api_name()};
  ElementStats stats;
  stats.elements = stored.size();
  rep().AddChecked("diff.allgather", name, stats, false);
  const std::string detail = absl::StrCat(
      judge.detail, "; rank ", worst->rank, "'s all-gather output, as ", DTypeName(t->meta.dtype), ", is operand ", operand_a ? "A" : "B", " of rank ", worst->rank, " seq ", worst->op->seq, " at elements ", off,
      "..", off + stored.size() - 1, " (", p, " chunks of ", len, "): ", where);
  const Op* gref = RefOf(worst->rank, gather);
  Find(inside ? "diff.inside" : "diff.between", name, gref != nullptr ? *gref : rop, inside ? "recv" : "send",
       inside ? "inside" : "between", rel, MaxAbsDiff(stored, want_stored), judge.eps, rel / judge.tau, judge.tau,
       judge.model,
       inside ? absl::StrCat("the reference's values of operand ", operand_a ? "A" : "B", " of rank ", worst->rank,
                             " seq ", worst->op->seq, " are in other chunks of its output (",
                             FormatNumber(rel_moved), " relative Frobenius there; ", judge.why,
                             "): the all-gather's rank order is not the layout's")
              : absl::StrCat("its input from ", CommRankText(*gather, bad_chunk),
                             " already differs from the reference's values of operand ", operand_a ? "A" : "B",
                             " of rank ", worst->rank, " seq ", worst->op->seq, " (", judge.why, ")"),
       detail, gref != nullptr ? "" : ", whose operand it became");
  return true;
}

}  // namespace ttrace::analyzer::diff_internal
