// GEMMs are checked rank by rank (each needs only its own operands); collectives after all ranks are loaded,
// since every member's inputs are needed for each one. What a stream says about its own completeness (its
// EndRecord and where it stops) is turned into gaps here, so that the verdict never calls lost evidence clean.
#include "analyzer/check.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzer/blas.h"
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

// Bytes of the tensors captured for `op` (the data the check reads).
uint64_t OpBytes(const Op& op) {
  uint64_t bytes = 0;
  for (const auto& t : op.tensors)
    if (t != nullptr) bytes += t->data.size();
  for (const auto* side : {&op.graph_in, &op.graph_out})
    for (const auto& [number, t] : *side)
      if (t != nullptr) bytes += t->data.size();
  return bytes;
}

void CheckOneOp(int rank, const Op& op, const CheckOptions& options, const GemmCheckOptions& gemm,
                CheckReport* report) {
  switch (op.kind) {
    case OpKind::kGemm: return CheckGemmOp(rank, op, report, gemm);
    case OpKind::kLtMatmul: return CheckLtMatmulOp(rank, op, report, options.lt, options.max_gemm_work);
    case OpKind::kConv: return CheckConvOp(rank, op, report, options.max_gemm_work);
    case OpKind::kGraph: return CheckGraphOp(rank, op, report, options.max_gemm_work);
    case OpKind::kCollective: return;
  }
}

// Merges the report of one op's check into `into` as if the op had been checked there: counts add, tightness and
// warnings in merge order (the first op to reach a ratio keeps it), findings appended.
void MergeOpReport(const CheckReport& part, CheckReport* into) {
  const CheckSummary& p = part.summary();
  CheckSummary& s = into->summary();
  for (const auto& [kind, n] : p.checked) s.checked[kind] += n;
  s.elements_checked += p.elements_checked;
  auto tighten = [](const Tightness& from, Tightness* to) {
    if (from.valid && (!to->valid || from.max_ratio > to->max_ratio)) *to = from;
  };
  for (const auto& [kind, t] : p.tightness) tighten(t, &s.tightness[kind]);
  tighten(p.overall, &s.overall);
  for (const auto& [reason, n] : p.not_checked) s.not_checked[reason] += n;
  for (const auto& [method, g] : p.gemm_methods) {
    GemmMethodSummary& m = s.gemm_methods[method];
    m.replayed = m.ops == 0 ? g.replayed : std::min(m.replayed, g.replayed);
    m.ops += g.ops;
    m.guaranteed = std::max(m.guaranteed, g.guaranteed);
    m.screened = std::max(m.screened, g.screened);
  }
  if (!p.gemm_model.empty()) s.gemm_model = p.gemm_model;
  for (const std::string& w : p.warnings) into->Warn(w);
  s.warnings_suppressed += p.warnings_suppressed;
  for (const std::string& g : p.gaps) into->AddGap(g);
  for (const Finding& f : part.findings()) into->AddFinding(f);
}

// Checks `items` on `threads` workers; the calling thread merges the reports in item order. A worker does not
// start an item more than `window` ahead of the merge, so at most that many reports wait in memory.
void CheckOps(const std::vector<std::pair<int, const Op*>>& items, const CheckOptions& options,
              const GemmCheckOptions& gemm, int threads, CheckReport* report,
              const std::function<void(size_t item)>& merged_one) {
  const size_t n = items.size();
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) {
      CheckReport part;
      CheckOneOp(items[i].first, *items[i].second, options, gemm, &part);
      MergeOpReport(part, report);
      merged_one(i);
    }
    return;
  }
  const size_t window = 4 * static_cast<size_t>(threads) + 16;
  std::vector<std::unique_ptr<CheckReport>> slots(n);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0, merged = 0;
  auto work = [&] {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return next >= n || next < merged + window; });
        if (next >= n) return;
        i = next++;
      }
      auto part = std::make_unique<CheckReport>();
      CheckOneOp(items[i].first, *items[i].second, options, gemm, part.get());
      {
        std::lock_guard<std::mutex> lock(mu);
        slots[i] = std::move(part);
      }
      cv.notify_all();
    }
  };
  // BLAS's own threads would compete with the workers: one each while they run (blas.h: set before any call).
  const int blas_before = SetBlasThreads(1);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(work);
  for (size_t i = 0; i < n; ++i) {
    std::unique_ptr<CheckReport> part;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return slots[i] != nullptr; });
      part = std::move(slots[i]);
    }
    MergeOpReport(*part, report);
    part.reset();
    {
      std::lock_guard<std::mutex> lock(mu);
      merged = i + 1;
    }
    cv.notify_all();
    merged_one(i);
  }
  for (std::thread& w : workers) w.join();
  SetBlasThreads(blas_before);
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
  CheckCounts counts;
  counts.ops_total = s.ops;
  std::vector<std::pair<int, const Op*>> items;
  std::vector<uint64_t> item_bytes;
  items.reserve(gemms);
  item_bytes.reserve(gemms);
  for (const RankTrace& t : set.ranks)
    for (const Op& op : t.ops) {
      const uint64_t bytes = OpBytes(op);
      counts.bytes_total += bytes;
      if (op.kind == OpKind::kCollective) continue;
      items.emplace_back(t.rank(), &op);
      item_bytes.push_back(bytes);
    }
  const int threads = options.threads > 0 ? options.threads
                                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  CheckOps(items, options, gemm, std::min<int>(threads, static_cast<int>(std::min<size_t>(items.size(), 1 << 16))),
           &report, [&](size_t i) {
             ++counts.ops_done;
             counts.bytes_done += item_bytes[i];
             if (progress) progress(counts);
           });
  const uint64_t coll_bytes_start = counts.bytes_done;
  const uint64_t coll_bytes = counts.bytes_total - coll_bytes_start;
  const uint64_t colls = counts.ops_total - gemms;
  CheckCollectives(set, &report, [&](uint64_t n) {
    counts.ops_done = gemms + n;
    // Collectives' bytes are counted in proportion to the collectives checked.
    counts.bytes_done = coll_bytes_start + (colls == 0 ? coll_bytes
                                                      : static_cast<uint64_t>(static_cast<double>(coll_bytes) *
                                                                              static_cast<double>(std::min(n, colls)) /
                                                                              static_cast<double>(colls)));
    if (progress) progress(counts);
  });
  report.Finish();
  return report;
}

}  // namespace ttrace::analyzer
