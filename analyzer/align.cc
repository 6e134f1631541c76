// The band of the LCS is the length difference plus max_gap: training programs repeat one step's op pattern, so
// an unbounded LCS would cost O(n·m) for nothing, and a match far outside the band would pair ops of different
// steps.
#include "analyzer/align.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "analyzer/shard.h"

namespace ttrace::analyzer {

namespace {

bool Divides(int64_t ref, int64_t cand) { return cand > 0 ? ref % cand == 0 : ref == 0; }

}  // namespace

bool Compatible(const Op& ref, const Op& cand) {
  if (ref.kind != cand.kind) return false;
  if (ref.kind == OpKind::kGemm) {
    const format::GemmRecord &r = ref.gemm, &c = cand.gemm;
    if (r.a_type != c.a_type || r.b_type != c.b_type || r.c_type != c.c_type || r.transa != c.transa ||
        r.transb != c.transb)
      return false;
    const GemmShape rs = LogicalShape(r), cs = LogicalShape(c);
    return Divides(rs.batch, cs.batch) && Divides(rs.m, cs.m) && Divides(rs.n, cs.n) && Divides(rs.k, cs.k);
  }
  const format::CollectiveRecord &r = ref.coll, &c = cand.coll;
  return r.api == c.api && r.nccl_dtype == c.nccl_dtype && Divides(r.count, c.count);
}

namespace {

// The weight of aligning `ref` with a compatible `cand`: 1024 minus 16·log2 of how many times larger the reference
// op is, so that among equally long alignments the one pairing ops of similar size wins.
int32_t MatchWeight(const Op& ref, const Op& cand) {
  double ratio = 1;
  if (ref.kind == OpKind::kGemm) {
    const GemmShape r = LogicalShape(ref.gemm), c = LogicalShape(cand.gemm);
    ratio = static_cast<double>(r.m) * r.n * r.k / std::max<double>(1, static_cast<double>(c.m) * c.n * c.k);
  } else {
    ratio = static_cast<double>(ref.coll.count) / std::max<double>(1, static_cast<double>(cand.coll.count));
  }
  return 1024 - static_cast<int32_t>(std::min(1000.0, 16 * std::log2(std::max(1.0, ratio))));
}

}  // namespace

bool SameSignature(const Op& ref, const Op& cand) {
  if (ref.kind != cand.kind || ref.api != cand.api) return false;
  if (ref.kind == OpKind::kGemm) {
    const format::GemmRecord &r = ref.gemm, &c = cand.gemm;
    return r.m == c.m && r.n == c.n && r.k == c.k && r.batch_count == c.batch_count && r.transa == c.transa &&
           r.transb == c.transb && r.a_type == c.a_type && r.b_type == c.b_type && r.c_type == c.c_type &&
           r.compute_type == c.compute_type;
  }
  const format::CollectiveRecord &r = ref.coll, &c = cand.coll;
  return r.count == c.count && r.nccl_dtype == c.nccl_dtype && r.red_op == c.red_op && r.comm_size == c.comm_size &&
         r.comm_rank == c.comm_rank && r.root_or_peer == c.root_or_peer;
}

std::string SignatureText(const Op& op) {
  if (op.kind == OpKind::kGemm) {
    const GemmShape s = LogicalShape(op.gemm);
    return absl::StrCat(op.api_name(), " m=", s.m, " n=", s.n, " k=", s.k, s.batch > 1 ? " batch=" : "",
                        s.batch > 1 ? absl::StrCat(s.batch) : "");
  }
  return absl::StrCat(op.api_name(), " count=", op.coll.count, " comm_size=", op.coll.comm_size);
}

namespace {

std::vector<const Op*> Pointers(const std::vector<Op>& ops) {
  std::vector<const Op*> out;
  out.reserve(ops.size());
  for (const Op& op : ops) out.push_back(&op);
  return out;
}

}  // namespace

RankAlignment AlignOps(const std::vector<Op>& ref, const std::vector<Op>& cand, int64_t max_gap) {
  return AlignOps(Pointers(ref), Pointers(cand), max_gap);
}

RankAlignment AlignOps(const std::vector<const Op*>& ref_ops, const std::vector<const Op*>& cand_ops,
                       int64_t max_gap) {
  auto ref = [&](int64_t i) -> const Op& { return *ref_ops[static_cast<size_t>(i)]; };
  auto cand = [&](int64_t j) -> const Op& { return *cand_ops[static_cast<size_t>(j)]; };
  const int64_t n = static_cast<int64_t>(ref_ops.size()), m = static_cast<int64_t>(cand_ops.size());
  RankAlignment out;
  out.ref_of_cand.assign(static_cast<size_t>(m), -1);
  out.cand_of_ref.assign(static_cast<size_t>(n), -1);
  const int64_t band = std::llabs(n - m) + max_gap;
  const int64_t width = 2 * band + 1;
  // score[i][d]: LCS of ref[i..] and cand[j..] with j = i + d - band; stored row-wise over the band.
  std::vector<int32_t> score(static_cast<size_t>((n + 1) * width), 0);
  auto at = [&](int64_t i, int64_t j) -> int32_t {
    const int64_t d = j - i + band;
    if (i > n || j > m || d < 0 || d >= width) return 0;
    return score[static_cast<size_t>(i * width + d)];
  };
  for (int64_t i = n; i >= 0; --i)
    for (int64_t d = width - 1; d >= 0; --d) {
      const int64_t j = i + d - band;
      if (j < 0 || j > m || i == n || j == m) continue;
      int32_t best = std::max(at(i + 1, j), at(i, j + 1));
      if (Compatible(ref(i), cand(j))) best = std::max(best, at(i + 1, j + 1) + MatchWeight(ref(i), cand(j)));
      score[static_cast<size_t>(i * width + d)] = best;
    }
  for (int64_t i = 0, j = 0; i < n && j < m;) {
    const int64_t d = j - i + band;
    if (d < 0) {
      ++j;
      continue;
    }
    if (d >= width) {
      ++i;
      continue;
    }
    if (Compatible(ref(i), cand(j)) && at(i, j) == at(i + 1, j + 1) + MatchWeight(ref(i), cand(j))) {
      out.cand_of_ref[i] = j;
      out.ref_of_cand[j] = i;
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  for (int64_t j = 0; j < m; ++j) {
    if (out.ref_of_cand[j] >= 0) continue;
    int64_t best = -1;
    for (int64_t i = std::max<int64_t>(0, j - max_gap); i < std::min(n, j + max_gap + 1); ++i)
      if (out.cand_of_ref[i] < 0 && Compatible(ref(i), cand(j)) &&
          (best < 0 || std::llabs(i - j) < std::llabs(best - j)))
        best = i;
    if (best >= 0) {
      out.cand_of_ref[best] = j;
      out.ref_of_cand[j] = best;
      ++out.reordered;
    }
  }
  return out;
}

}  // namespace ttrace::analyzer
