// The terminal report is for a person reading a failed job: the verdict first, then what was and was not
// checked, how close clean ops came to their bounds, and the first finding complete enough to act on.
#include "analyzer/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/blas.h"

namespace ttrace::analyzer {

namespace {

std::string OpText(const OpName& op) { return absl::StrCat("rank ", op.rank, " seq ", op.seq, " ", op.api); }

void UpdateTightness(Tightness* t, const OpName& op, double ratio) {
  if (!t->valid || ratio > t->max_ratio) {
    t->valid = true;
    t->max_ratio = ratio;
    t->op = op;
  }
}

std::string CountsText(const std::map<std::string, uint64_t>& counts) {
  std::vector<std::string> parts;
  for (const auto& [key, n] : counts) parts.push_back(absl::StrCat(key, " ", n));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::string ReplicaText(const ReplicaSummary& r) {
  if (r.operands_established == 0)
    return r.groups == 0 ? "no two ranks ran the same op sequence" : "no operand was identical on two ranks";
  std::vector<std::string> sets;
  for (const std::vector<int>& set : r.sets) {
    if (sets.size() == 8) {
      sets.push_back("...");
      break;
    }
    sets.push_back(absl::StrCat("{", absl::StrJoin(set, ", "), "}"));
  }
  return absl::StrCat(FormatCount(r.operands_established), " operands identical on ranks ",
                      absl::StrJoin(sets, " "), "; ", FormatCount(r.uses_compared),
                      " later reads compared bitwise, ", FormatCount(r.parted), " parted");
}

uint64_t CheckSummary::checked_total() const {
  uint64_t n = 0;
  for (const auto& [kind, c] : checked) n += c;
  return n;
}

uint64_t CheckSummary::not_checked_total() const {
  uint64_t n = 0;
  for (const auto& [reason, c] : not_checked) n += c;
  return n;
}

namespace {

double SortRatio(double r) { return std::isnan(r) ? HUGE_VAL : r; }

// Whether `a` is the worse point of a bucket: higher ratio, then lower seq (a total order: the bucket's point does
// not depend on the order points arrive in).
bool Worse(const OpPoint& a, const OpPoint& b) {
  const double ra = SortRatio(a.ratio), rb = SortRatio(b.ratio);
  if (ra != rb) return ra > rb;
  return a.seq < b.seq;
}

// Folds `p` into bucket `into` (empty: ops == 0).
void Fold(const OpPoint& p, OpPoint* into) {
  const uint64_t ops = into->ops + p.ops;
  const bool clean = into->clean && p.clean;
  if (into->ops == 0 || Worse(p, *into)) *into = p;
  into->ops = ops;
  into->clean = clean;
}

}  // namespace

void OpTimeline::Coarsen(Rank* r, uint32_t shift) {
  if (shift <= r->shift) return;
  std::map<uint64_t, OpPoint> coarse;
  for (const auto& [bucket, p] : r->buckets) {
    auto [it, inserted] = coarse.try_emplace(p.seq >> shift);
    if (inserted) it->second.ops = 0;
    Fold(p, &it->second);
  }
  r->buckets.swap(coarse);
  r->shift = shift;
}

void OpTimeline::Add(int rank, OpPoint point) {
  if (rank < 0 || point.ops == 0) return;
  Rank& r = ranks_[rank];
  r.ops += point.ops;
  auto [it, inserted] = r.buckets.try_emplace(point.seq >> r.shift);
  if (inserted) it->second.ops = 0;
  Fold(point, &it->second);
  while (r.buckets.size() > kMaxPointsPerRank) Coarsen(&r, r.shift + 1);
}

void OpTimeline::Merge(const OpTimeline& other) {
  for (const auto& [rank, o] : other.ranks_) {
    Rank& r = ranks_[rank];
    Coarsen(&r, o.shift);  // every bucket of `o` then falls inside one of `r`'s
    for (const auto& [bucket, p] : o.buckets) {
      r.ops += p.ops;
      auto [it, inserted] = r.buckets.try_emplace(p.seq >> r.shift);
      if (inserted) it->second.ops = 0;
      Fold(p, &it->second);
    }
    while (r.buckets.size() > kMaxPointsPerRank) Coarsen(&r, r.shift + 1);
  }
}

void CheckReport::NameNotChecked(const std::string& reason, const OpName& op) {
  std::vector<OpName>& named = summary_.not_checked_ops[reason];
  auto before = [](const OpName& a, const OpName& b) { return a.seq != b.seq ? a.seq < b.seq : a.rank < b.rank; };
  auto at = std::lower_bound(named.begin(), named.end(), op, before);
  if (at != named.end() && at->seq == op.seq && at->rank == op.rank) return;
  if (named.size() >= kNamedPerReason && at == named.end()) return;
  named.insert(at, op);
  if (named.size() > kNamedPerReason) named.pop_back();
}

void CheckReport::AddChecked(const std::string& kind, const OpName& op, const ElementStats& stats, bool clean) {
  ++summary_.checked[kind];
  if (op.rank >= 0) {
    OpPoint p;
    p.seq = op.seq;
    p.ratio = stats.worst_ratio;
    p.api = op.api;
    p.kind = kind;
    p.clean = clean;
    timeline_.Add(op.rank, std::move(p));
  }
  summary_.elements_checked += stats.elements;
  if (!clean || !std::isfinite(stats.worst_ratio) || stats.elements == 0) return;
  UpdateTightness(&summary_.tightness[kind], op, stats.worst_ratio);
  UpdateTightness(&summary_.overall, op, stats.worst_ratio);
}

void CheckReport::Warn(const std::string& warning) {
  auto& w = summary_.warnings;
  if (std::find(w.begin(), w.end(), warning) != w.end()) return;
  if (w.size() >= kMaxWarnings) {
    ++summary_.warnings_suppressed;
    return;
  }
  w.push_back(warning);
}

void CheckReport::AddNotChecked(const std::string& reason, uint64_t ops) { summary_.not_checked[reason] += ops; }

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kClean: return "clean";
    case Verdict::kFindings: return "findings";
    case Verdict::kIncomplete: return "incomplete";
  }
  return "incomplete";
}

std::string FormatCount(uint64_t n) {
  std::string digits = absl::StrCat(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

Verdict CheckReport::verdict() const {
  if (!findings_.empty()) return Verdict::kFindings;
  if (!summary_.gaps.empty() || summary_.not_checked_total() > 0 || summary_.checked_total() == 0)
    return Verdict::kIncomplete;
  return Verdict::kClean;
}

void CheckReport::Finish() {
  if (!summary_.gemm_methods.empty() && summary_.blas_core.empty()) summary_.blas_core = BlasCoreName();
  const uint64_t not_checked = summary_.not_checked_total();
  if (not_checked > 0) {
    std::vector<std::pair<std::string, uint64_t>> reasons(summary_.not_checked.begin(), summary_.not_checked.end());
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> parts;
    for (const auto& [reason, n] : reasons)
      parts.push_back(reasons.size() == 1 ? reason : absl::StrCat(reason, " ", FormatCount(n)));
    AddGap(absl::StrCat(FormatCount(not_checked), " of ", FormatCount(summary_.ops),
                        " ops not checked: ", absl::StrJoin(parts, ", ")));
  } else if (summary_.checked_total() == 0) {
    AddGap(summary_.ops == 0 ? "the trace holds no ops: nothing was checked" : "no op was checked");
  }
  std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
    if (a.seq != b.seq) return a.seq < b.seq;
    return a.rank < b.rank;
  });
}

void CheckReport::AddGemmMethod(const std::string& method, const std::string& model, double guaranteed,
                                double screened, double replayed, bool vdpbf16ps) {
  GemmMethodSummary& m = summary_.gemm_methods[method];
  if (m.ops == 0) m.replayed = replayed;
  ++m.ops;
  if (vdpbf16ps) ++m.vdpbf16ps_ops;
  m.guaranteed = std::max(m.guaranteed, guaranteed);
  m.screened = std::max(m.screened, screened);
  m.replayed = std::min(m.replayed, replayed);
  summary_.gemm_model = model;
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  return absl::StrFormat("%.4g", v);
}

void PrintReport(const CheckReport& report, std::ostream& out, size_t max_rows) {
  const CheckSummary& s = report.summary();
  const auto& findings = report.findings();
  out << s.title << " " << s.dir << "\n";
  out << "  job '" << s.job << "', " << s.streams << " stream" << (s.streams == 1 ? "" : "s");
  if (s.world_size >= 0) out << " of world size " << s.world_size;
  out << ", " << s.ops << " ops\n";
  const Verdict verdict = report.verdict();
  out << "verdict:     "
      << (verdict == Verdict::kFindings     ? absl::StrCat("FINDINGS (", findings.size(), ")")
          : verdict == Verdict::kIncomplete ? std::string("INCOMPLETE (evidence missing, see below)")
                                            : std::string("CLEAN (every op checked)"))
      << "\n";
  out << "checked:     " << s.checked_total() << " ops";
  if (!s.checked.empty()) out << " (" << CountsText(s.checked) << ")";
  out << ", " << s.elements_checked << " elements\n";
  out << "not checked: " << s.not_checked_total() << " ops";
  if (!s.not_checked.empty()) out << " (" << CountsText(s.not_checked) << ")";
  out << "\n";
  if (s.unknown_records > 0) out << "skipped:     " << s.unknown_records << " records of unknown type\n";
  out << "tightness:   ";
  if (!s.overall.valid) {
    out << "no clean op with a nonzero bound\n";
  } else {
    out << "max err/bound on clean ops " << FormatNumber(s.overall.max_ratio);
    std::vector<std::string> parts;
    for (const auto& [kind, t] : s.tightness)
      parts.push_back(absl::StrCat(kind, " ", FormatNumber(t.max_ratio), " at ", OpText(t.op)));
    out << " (" << absl::StrJoin(parts, "; ") << ")\n";
  }
  if (!s.gemm_methods.empty()) {
    std::vector<std::string> parts;
    for (const auto& [method, g] : s.gemm_methods) {
      if (method == "full" || method == "full-fp32") {
        parts.push_back(absl::StrCat(
            method == "full" ? "full replay " : "full replay in FP32 slices ", g.ops,
            " (catches an element off by more than ", FormatNumber(g.guaranteed), " of max|C|",
            g.vdpbf16ps_ops > 0 ? absl::StrCat("; ", g.vdpbf16ps_ops, " on vdpbf16ps") : std::string(), ")"));
      } else {
        parts.push_back(absl::StrCat(method, " ", g.ops, " (catches an element off by more than ",
                                     FormatNumber(g.guaranteed), " of max|C|; screened ", FormatNumber(g.screened),
                                     "; replays >= ", FormatNumber(100 * g.replayed), "% of elements)"));
      }
    }
    out << "gemm:        " << absl::StrJoin(parts, "; ") << ", bound " << s.gemm_model;
    if (!s.blas_core.empty()) out << ", OpenBLAS kernels " << s.blas_core;
    out << "\n";
  }
  if (s.replicas.ran) out << "replicas:    " << ReplicaText(s.replicas) << "\n";
  if (!findings.empty()) {
    const Finding& f = findings.front();
    out << "\nfirst finding: rank " << f.rank << " seq " << f.seq << " " << f.api << " [" << f.check << "]\n";
    out << "  " << f.message << "\n";
    if (f.context.valid) out << "  context: " << ContextText(f.context) << "\n";
    if (!f.model.empty() || !f.detail.empty()) out << "  model " << f.model << ": " << f.detail << "\n";
    if (f.elements > 0) {
      out << "  max abs err " << FormatNumber(f.max_abs_err) << ", max rel err " << FormatNumber(f.max_rel_err)
          << ", threshold " << FormatNumber(f.threshold) << " (err/bound " << FormatNumber(f.ratio) << "), "
          << f.violations << " of " << f.elements << " elements violate\n";
    }
    if (f.has_element) {
      out << "  first violation: element " << f.first.index << " (row " << f.first.row << ", col " << f.first.col
          << ", batch " << f.first.batch << "): got " << FormatNumber(f.first.got) << ", expected "
          << FormatNumber(f.first.expected) << ", threshold " << FormatNumber(f.first.threshold) << "\n";
    }
    out << "\nfindings:\n";
    out << absl::StrFormat("  %5s %8s  %-28s %-20s %11s %11s %11s %11s\n", "rank", "seq", "api", "check",
                           "max_abs_err", "max_rel_err", "threshold", "ratio");
    for (size_t i = 0; i < findings.size() && i < max_rows; ++i) {
      const Finding& g = findings[i];
      out << absl::StrFormat("  %5d %8d  %-28s %-20s %11s %11s %11s %11s\n", g.rank, g.seq, g.api, g.check,
                             FormatNumber(g.max_abs_err), FormatNumber(g.max_rel_err), FormatNumber(g.threshold),
                             FormatNumber(g.ratio));
    }
    if (findings.size() > max_rows)
      out << "  ... " << findings.size() - max_rows << " more (see --json)\n";
  }
  if (!s.gaps.empty()) {
    out << "\n" << (verdict == Verdict::kIncomplete ? "incomplete:" : "also incomplete:") << "\n";
    for (const std::string& g : s.gaps) out << "  " << g << "\n";
  }
  if (!s.warnings.empty()) {
    out << "\nwarnings:\n";
    for (const std::string& w : s.warnings) out << "  " << w << "\n";
    if (s.warnings_suppressed > 0) out << "  ... " << s.warnings_suppressed << " more warnings suppressed\n";
  }
}

}  // namespace ttrace::analyzer
