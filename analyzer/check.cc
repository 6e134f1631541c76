// GEMMs are checked rank by rank (each needs only its own operands); collectives after all ranks are loaded,
// since every member's inputs are needed for each one. What a stream says about its own completeness (its
// EndRecord and where it stops) is turned into gaps here, so that the verdict never calls lost evidence clean.
#include "analyzer/check.h"

#include <algorithm>
#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzer/collective_check.h"
#include "analyzer/conv_check.h"
#include "analyzer/graph_check.h"
#include "analyzer/lt_check.h"

namespace ttrace::analyzer {

namespace {

std::string RankName(const RankTrace& t) {
  return t.rank() >= 0 ? absl::StrCat("rank ", t.rank()) : BaseName(t.path);
}

// Where a stream without its EndRecord stops: its last op and frame.
std::string WhereItEnds(const RankTrace& t) {
  std::string at = t.ops.empty() ? std::string("before its first op")
                                 : absl::StrCat("at seq ", t.ops.back().seq, " (", t.ops.back().api_name(), ")");
  absl::StrAppend(&at, ", after ", FormatCount(t.frames), t.frames == 1 ? " frame" : " frames");
  return at;
}

void AddStreamGaps(const RankTrace& t, CheckReport* report) {
  const std::string who = RankName(t);
  if (!t.ended) {
    std::string gap = absl::StrCat(who, "'s stream ends ", WhereItEnds(t), " without an end record");
    if (t.truncated) absl::StrAppend(&gap, ", cut inside frame ", t.frames);
    absl::StrAppend(&gap, " (the writer was killed, or could not write: a full disk)");
    report->AddGap(gap);
    return;
  }
  const format::EndRecord& e = t.end;
  if (e.reason == static_cast<uint32_t>(format::EndReason::kSignal)) {
    const char* name = e.signal == SIGTERM ? "SIGTERM" : e.signal == SIGINT ? "SIGINT" : nullptr;
    report->Warn(absl::StrCat(who, "'s stream was closed when the process got ",
                              name != nullptr ? std::string(name) : absl::StrCat("signal ", e.signal)));
  }
  if (t.ops.size() + t.graph_templates < e.ops) {
    report->AddGap(absl::StrCat(who, ": ", FormatCount(e.ops - t.ops.size() - t.graph_templates), " of ",
                                FormatCount(e.ops),
                                " ops have no call record (calls that had not returned when the stream closed)"));
  }
  if (t.tensor_records < e.tensors) {
    report->AddGap(absl::StrCat(who, ": ", FormatCount(e.tensors - t.tensor_records), " of ",
                                FormatCount(e.tensors), " tensor records the writer counted are missing"));
  }
  if (t.records != e.records + 1) {
    report->AddGap(absl::StrCat(who, ": the stream holds ", FormatCount(t.records - 1),
                                " records before its end record, which counts ", FormatCount(e.records)));
  }
}

}  // namespace

CheckReport RunChecks(const TraceSet& set, const CheckProgress& progress, const CheckOptions& options) {
  CheckReport report;
  CheckSummary& s = report.summary();
  s.dir = set.dir;
  s.job = set.job;
  s.world_size = set.world_size;
  s.streams = static_cast<int>(set.ranks.size());
  for (const std::string& w : set.warnings) report.Warn(w);
  if (set.missing_rank_count > 0) {
    std::vector<std::string> listed;
    for (int r : set.missing_ranks) listed.push_back(absl::StrCat(r));
    report.AddGap(absl::StrCat(FormatCount(set.missing_rank_count), " of ", FormatCount(set.world_size),
                               " ranks have no stream (", absl::StrJoin(listed, ", "),
                               set.missing_rank_count > listed.size() ? ", ...)" : ")"));
  }
  uint64_t gemms = 0;
  for (const RankTrace& t : set.ranks) {
    s.ops += t.ops.size();
    s.unknown_records += t.unknown_records;
    AddStreamGaps(t, &report);
    if (t.graph_templates > 0)
      report.Warn(absl::StrCat(RankName(t), ": ", t.graph_templates,
                               " calls were captured into CUDA graphs; each launch of them is checked as an op"));
    if (t.dropped_payloads > 0)
      report.Warn(absl::StrCat(RankName(t), ": the capture dropped ", t.dropped_payloads,
                               " tensors (their ops are not checked)"));
    for (const Op& op : t.ops) gemms += op.kind != OpKind::kCollective;
  }
  GemmCheckOptions gemm = options.gemm;
  gemm.max_work = options.max_gemm_work;
  const uint64_t total = s.ops;
  uint64_t done = 0;
  for (const RankTrace& t : set.ranks) {
    for (const Op& op : t.ops) {
      if (op.kind == OpKind::kGemm) {
        CheckGemmOp(t.rank(), op, &report, gemm);
      } else if (op.kind == OpKind::kLtMatmul) {
        CheckLtMatmulOp(t.rank(), op, &report, options.lt, options.max_gemm_work);
      } else if (op.kind == OpKind::kConv) {
        CheckConvOp(t.rank(), op, &report, options.max_gemm_work);
      } else if (op.kind == OpKind::kGraph) {
        CheckGraphOp(t.rank(), op, &report, options.max_gemm_work);
      } else {
        continue;
      }
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
