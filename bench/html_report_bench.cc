// What the HTML report costs the check: the timeline each AddChecked feeds (report.h OpTimeline), as `ttrace check`
// merges it (one part report per op, merged in trace order), per op; and writing the page of a large job (64
// ranks of 1M checked ops each, decimated, 500 findings): its time and size.
// Usage: html_report_bench [ops per rank [PAGE.html]]   (default 1,000,000; the page is written when named)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "analyzer/html_report.h"
#include "analyzer/report.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ttrace::analyzer;
  const uint64_t ops = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const int ranks = 64;
  CheckReport report;
  report.summary().ops = ops * ranks;
  ElementStats stats;
  stats.elements = 4096;
  uint64_t x = 88172645463325252ull;
  double merge_s = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const double start = Now();
    for (uint64_t seq = 0; seq < ops; ++seq) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      stats.worst_ratio = static_cast<double>(x % 1000) * 1e-3;
      CheckReport part;
      part.AddChecked(seq % 4 == 3 ? "allreduce" : "gemm",
                      OpName{rank, seq, seq % 4 == 3 ? "ncclAllReduce" : "cublasGemmStridedBatchedEx"}, stats, true);
      report.timeline().Merge(part.timeline());
    }
    merge_s += Now() - start;
  }
  // The same part reports without a timeline point (rank -1) and without the merge: what the timeline adds.
  double base_s = 0;
  {
    const double start = Now();
    for (uint64_t seq = 0; seq < ops; ++seq) {
      stats.worst_ratio = static_cast<double>(seq % 1000) * 1e-3;
      CheckReport part;
      part.AddChecked(seq % 4 == 3 ? "allreduce" : "gemm",
                      OpName{-1, seq, seq % 4 == 3 ? "ncclAllReduce" : "cublasGemmStridedBatchedEx"}, stats, true);
      if (part.summary().checked.empty()) return 1;
    }
    base_s = (Now() - start) * ranks;
  }
  for (int f = 0; f < 500; ++f) {
    Finding finding;
    finding.check = "gemm.replay";
    finding.rank = f % ranks;
    finding.seq = (static_cast<uint64_t>(f) * 7919) % ops;
    finding.api = "cublasGemmEx";
    finding.message = "1 of 4096 output elements exceed the bound";
    finding.ratio = 12;
    report.AddFinding(finding);
  }
  report.Finish();
  size_t points = 0;
  for (const auto& [rank, r] : report.timeline().ranks()) points += r.buckets.size();
  const double start = Now();
  const std::string page = ReportToHtml(report);
  const double page_s = Now() - start;
  const double per_op = static_cast<double>(ops) * ranks;
  std::printf("timeline: %d ranks x %llu ops, part report + merge %.0f ns per op (without the timeline %.0f), %zu "
              "points kept\n", ranks, static_cast<unsigned long long>(ops), 1e9 * merge_s / per_op,
              1e9 * base_s / per_op, points);
  std::printf("page: %.1f MB in %.0f ms\n", page.size() / 1e6, 1e3 * page_s);
  if (argc > 2) std::ofstream(argv[2], std::ios::binary) << page;
  return 0;
}
