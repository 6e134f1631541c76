// CheckReport: what `ttrace check` found, built by the checks (gemm_check, collective_check) and rendered by
// PrintReport (terminal) and WriteReportJson (json.h, DESIGN.md §4 schema).
//
// Counting contract: every op of every rank ends up exactly once in `checked` (by kind) or `not_checked` (by
// reason), so checked + not_checked = ops. A finding names the (rank, seq) of the op whose output is wrong.
//
// Timeline contract (html_report.h): every AddChecked of an op with a rank >= 0 adds its worst err/bound to the
// timeline, bounded per rank (OpTimeline); ops not checked are named per reason (at most kNamedPerReason each, the
// lowest (seq, rank)) by the caller that knows the op (check.cc), through NameNotChecked. Both are the same whatever
// order ops are added or merged in.
//
// Verdict (DESIGN.md §4): kFindings when any finding; else kIncomplete when evidence is missing: a gap was added
// (a stream without its end record, a missing rank, records the capture lost), some op was not checked, or
// nothing was checked at all; else kClean, a promise that every op of the trace was checked. Single-threaded.
#ifndef TTRACE_ANALYZER_REPORT_H_
#define TTRACE_ANALYZER_REPORT_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "analyzer/element_stats.h"
#include "analyzer/op_context.h"

namespace ttrace::analyzer {

// One element of a finding (the first violating one).
struct ElementDetail {
  uint64_t index = 0;          // linear index into the output (column-major, batch after batch)
  int64_t row = 0, col = 0, batch = 0;
  double got = 0, expected = 0, threshold = 0;
};

struct Finding {
  std::string check;           // "gemm.replay", "allreduce.bound", "allgather.exact", "sendrecv.match", ... (collective_check.h)
  int rank = -1;
  uint64_t seq = 0;
  std::string api;
  std::string message;         // one line, complete on its own
  std::string model;           // error model name (error_model.h), empty when none applies
  std::string method;          // how a GEMM was verified: "full" (replay) or "projection"; empty for other checks
  double max_abs_err = 0;
  double max_rel_err = 0;
  double threshold = 0;        // the bound at the worst element
  double ratio = 0;            // err/bound at the worst element (+Inf: Inf/NaN or a nonzero error against 0)
  uint64_t elements = 0;
  uint64_t violations = 0;
  bool has_element = false;
  ElementDetail first;         // valid when has_element
  std::string detail;          // what the check assumed (precision, peers), may be empty
  OpContext context;           // what ran before the op on its thread (CUPTI), when the trace recorded it
};

// An op, named as reports name it.
struct OpName {
  int rank = -1;
  uint64_t seq = 0;
  std::string api;
};

// The first divergent op of `ttrace diff` (diff.h; DESIGN.md §4 "first_divergence"); `ttrace check` has none.
struct Divergence {
  bool valid = false;
  OpName op;                  // the candidate op (the shard with the worst error)
  int64_t ref_seq = -1;       // the reference op it was compared with
  std::string operand;        // "A", "B", "C", "C0", "send", "recv"
  std::string kind;           // "inside" | "between"
  bool has_last_matching = false;
  OpName last_matching;       // the last op whose output matched, before it (same rank in bitwise mode)
  double err_eps = 0;         // relative Frobenius error / ε of the operand's type
  double ratio = 0;           // error over threshold at the worst element (or normwise for "between")
  double threshold = 0;
  std::string model;          // "bitwise", "diff.propagation", "diff.between", "diff.calibrated"
  OpContext context;          // what ran before the candidate op on its thread (CUPTI), when recorded
};

struct Tightness {
  bool valid = false;
  double max_ratio = 0;        // max err/bound over clean checked ops of this kind
  OpName op;                   // where it was reached
};

// The GEMMs verified by one method (gemm_check.h), with the method's sensitivity: the smallest single-element error
// it catches, relative to the largest |output| of its op, worst over the ops: `guaranteed` whatever the data,
// `screened` unless the other elements' rounding errors conspire against it; `replayed` is the smallest fraction
// of an op's elements compared one by one (1 for full replay).
struct GemmMethodSummary {
  uint64_t ops = 0;
  double guaranteed = 0, screened = 0, replayed = 1;
  uint64_t vdpbf16ps_ops = 0;  // "full-fp32": ops with slices computed by the vdpbf16ps kernel (bf16_slices.h)
};

// What the replica check (replica_check.h) compared.
struct ReplicaSummary {
  bool ran = false;
  uint64_t groups = 0;                  // groups of two or more ranks with the same op sequence
  std::set<std::vector<int>> sets;      // rank sets that held some operand bitwise identical (its replicas)
  uint64_t operands_established = 0;    // operands found identical on their replicas at a first read
  uint64_t uses_compared = 0;           // later reads of them compared bitwise across their replicas
  uint64_t parted = 0;                  // reads where the replicas differed
};

// One point of a rank's timeline: an op's worst err/bound, or, once decimated, the worst op of a bucket of seqs.
struct OpPoint {
  uint64_t seq = 0;
  double ratio = 0;   // worst |got-ref|/bound (0: exact; +Inf: Inf/NaN or a nonzero error against a zero bound)
  std::string api;
  std::string kind;   // the check's kind: "gemm", "allreduce", "conv", ...
  bool clean = true;  // false when some op of the point's bucket was not clean
  uint64_t ops = 1;   // ops the point stands for
};

// Each rank's err/bound per checked op, in memory bounded by kMaxPointsPerRank points per rank whatever the number
// of ops: a rank's seqs are grouped in buckets of 2^shift consecutive seqs, with the smallest shift that leaves at
// most kMaxPointsPerRank buckets; each bucket keeps its worst op (highest ratio, NaN as +Inf; ties: lowest seq) and
// counts the ops it stands for. The result depends only on the set of points added, not on their order.
class OpTimeline {
 public:
  static constexpr size_t kMaxPointsPerRank = 1024;
  struct Rank {
    uint32_t shift = 0;                   // 0: not decimated (one point per op)
    uint64_t ops = 0;                     // ops added
    std::map<uint64_t, OpPoint> buckets;  // by seq >> shift
  };
  void Add(int rank, OpPoint point);
  void Merge(const OpTimeline& other);
  const std::map<int, Rank>& ranks() const { return ranks_; }

 private:
  static void Coarsen(Rank* r, uint32_t shift);
  std::map<int, Rank> ranks_;
};

enum class Verdict { kClean, kFindings, kIncomplete };
const char* VerdictName(Verdict verdict);  // "clean", "findings", "incomplete"

struct CheckSummary {
  std::string title = "ttrace check";  // the report's first line, before `dir`
  std::string dir;
  std::string job;
  int world_size = -1;
  int streams = 0;
  uint64_t ops = 0;
  std::map<std::string, uint64_t> checked;      // by kind: "gemm", "allreduce", "allgather", "sendrecv", ...
  std::map<std::string, uint64_t> not_checked;  // by reason
  std::map<std::string, std::vector<OpName>> not_checked_ops;  // by reason: the lowest (seq, rank) named ones
  uint64_t elements_checked = 0;
  uint64_t unknown_records = 0;                 // skipped record types
  std::map<std::string, Tightness> tightness;   // by kind
  std::map<std::string, GemmMethodSummary> gemm_methods;  // by method: "full", "projection"
  std::string gemm_model;                       // the GEMM bound's model ("gemm.deterministic"), empty: no GEMM
  std::string blas_core;                        // OpenBLAS's kernels ("SkylakeX"; blas.h), set by Finish with GEMMs
  Tightness overall;
  std::vector<std::string> warnings;
  uint64_t warnings_suppressed = 0;
  std::vector<std::string> gaps;                // why the evidence is incomplete, each complete on its own
  ReplicaSummary replicas;

  uint64_t checked_total() const;
  uint64_t not_checked_total() const;
};

class CheckReport {
 public:
  // An op whose check ran. `clean` ops feed the tightness; findings are added separately.
  void AddChecked(const std::string& kind, const OpName& op, const ElementStats& stats, bool clean);
  void AddNotChecked(const std::string& reason, uint64_t ops = 1);
  // Names one op not checked for `reason` (counted by AddNotChecked); keeps the kNamedPerReason lowest (seq, rank).
  void NameNotChecked(const std::string& reason, const OpName& op);
  static constexpr size_t kNamedPerReason = 20;
  // One GEMM verified by `method` under `model`, with its sensitivity (GemmMethodSummary); `vdpbf16ps`: some of
  // its slices ran on the vdpbf16ps kernel.
  void AddGemmMethod(const std::string& method, const std::string& model, double guaranteed, double screened,
                     double replayed, bool vdpbf16ps = false);
  void AddFinding(Finding f) { findings_.push_back(std::move(f)); }
  // Adds a warning to the summary unless the same text was added before; at most kMaxWarnings are kept.
  void Warn(const std::string& warning);
  static constexpr size_t kMaxWarnings = 50;
  // Evidence that is missing (one line, names what and how much); makes the verdict incomplete.
  void AddGap(const std::string& gap) { summary_.gaps.push_back(gap); }
  // Orders findings by (seq, rank): the first is the earliest op number. Adds the gap of the ops not checked.
  void Finish();

  bool no_findings() const { return findings_.empty(); }
  Verdict verdict() const;
  const std::vector<Finding>& findings() const { return findings_; }
  std::vector<Finding>* mutable_findings() { return &findings_; }
  CheckSummary& summary() { return summary_; }
  const CheckSummary& summary() const { return summary_; }
  OpTimeline& timeline() { return timeline_; }
  const OpTimeline& timeline() const { return timeline_; }

 private:
  std::vector<Finding> findings_;
  CheckSummary summary_;
  OpTimeline timeline_;
};

// Terminal report: verdict, counts, tightness, the first finding in full, a table of findings (at most
// `max_rows`), warnings.
void PrintReport(const CheckReport& report, std::ostream& out, size_t max_rows = 20);

// One line on what the replica check compared: "12 operands identical on ranks {0, 2} {1, 3}; 36 later reads
// compared bitwise, 0 parted".
std::string ReplicaText(const ReplicaSummary& replicas);

// "1.25e-06"-style number for reports; "inf"/"nan" spelled out.
std::string FormatNumber(double v);
// 4800 -> "4,800".
std::string FormatCount(uint64_t n);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_REPORT_H_
