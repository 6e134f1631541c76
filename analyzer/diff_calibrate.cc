// The calibration run has the reference's layout, so its ops align with the reference's one for one (align.h
// still skips an op one run has and the other has not) and their operands compare element for element without
// merging shards.
#include "analyzer/diff_calibrate.h"

#include "absl/strings/str_cat.h"
#include "analyzer/align.h"
#include "analyzer/diff_sharded.h"
#include "analyzer/shard.h"

namespace ttrace::analyzer {

absl::StatusOr<Calibration> MeasureCalibration(const TraceSet& ref, const TraceSet& clean, int64_t max_gap) {
  if (ref.ranks.size() != 1 || clean.ranks.size() != 1)
    return absl::InvalidArgumentError(absl::StrCat("calibration needs a one-rank reference and a one-rank ",
                                                   "calibration run (the reference's layout); got ",
                                                   ref.ranks.size(), " and ", clean.ranks.size(), " ranks"));
  const std::vector<Op>& rops = ref.ranks[0].ops;
  const RankAlignment al = AlignOps(rops, clean.ranks[0].ops, max_gap);
  Calibration cal;
  cal.spread.resize(rops.size());
  for (size_t i = 0; i < rops.size(); ++i) {
    const int64_t j = al.cand_of_ref[i];
    if (j < 0) {
      ++cal.unaligned;
      continue;
    }
    if (rops[i].kind != OpKind::kGemm) continue;
    absl::StatusOr<LogicalGemm> r = DecodeLogicalGemm(rops[i]);
    absl::StatusOr<LogicalGemm> c = DecodeLogicalGemm(clean.ranks[0].ops[static_cast<size_t>(j)]);
    if (!r.ok() || !c.ok() || r->m != c->m || r->n != c->n || r->k != c->k) continue;
    cal.spread[i] = OperandSpread{RelFrobenius(c->a, r->a), RelFrobenius(c->b, r->b), RelFrobenius(c->c, r->c)};
    ++cal.measured;
  }
  return cal;
}

double CalibratedThreshold(double multiple, double spread, double unit_roundoff) {
  return multiple * spread + unit_roundoff;
}

}  // namespace ttrace::analyzer
