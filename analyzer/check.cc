// GEMMs are checked rank by rank (each needs only its own operands); collectives after all ranks are loaded,
// since every member's inputs are needed for each one.
#include "analyzer/check.h"

#include "absl/strings/str_cat.h"
#include "analyzer/collective_check.h"
#include "analyzer/gemm_check.h"

namespace ttrace::analyzer {

CheckReport RunChecks(const TraceSet& set, const CheckProgress& progress) {
  CheckReport report;
  CheckSummary& s = report.summary();
  s.dir = set.dir;
  s.job = set.job;
  s.world_size = set.world_size;
  s.streams = static_cast<int>(set.ranks.size());
  for (const std::string& w : set.warnings) report.Warn(w);
  uint64_t gemms = 0, collectives = 0;
  for (const RankTrace& t : set.ranks) {
    s.ops += t.ops.size();
    s.unknown_records += t.unknown_records;
    if (t.dropped_payloads > 0)
      report.Warn(absl::StrCat("rank ", t.rank(), ": the capture dropped ", t.dropped_payloads,
                               " tensors (their ops are not checked)"));
    for (const Op& op : t.ops) (op.kind == OpKind::kGemm ? gemms : collectives) += 1;
  }
  const uint64_t total = s.ops;
  uint64_t done = 0;
  for (const RankTrace& t : set.ranks) {
    for (const Op& op : t.ops) {
      if (op.kind != OpKind::kGemm) continue;
      CheckGemmOp(t.rank(), op, &report);
      if (progress) progress(++done, total);
    }
  }
  CheckCollectives(set, &report, [&](uint64_t n) {
    if (progress) progress(gemms + n, total);
  });
  report.Finish();
  return report;
}

}  // namespace ttrace::analyzer
