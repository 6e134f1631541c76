// The bitwise mode needs no error model: equal inputs and a deterministic op give equal bits, so any difference
// is a divergence and its place is exact. The sharded mode is in diff_sharded.cc.
#include "analyzer/diff.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "analyzer/align.h"
#include "analyzer/check.h"
#include "analyzer/diff_sharded.h"
#include "analyzer/json.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::TensorSlot;

namespace {

bool SameLayout(const TraceSet& ref, const TraceSet& cand) {
  if (ref.ranks.size() != cand.ranks.size()) return false;
  for (size_t r = 0; r < ref.ranks.size(); ++r) {
    const auto &a = ref.ranks[r].ops, &b = cand.ranks[r].ops;
    if (ref.ranks[r].rank() != cand.ranks[r].rank() || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!SameSignature(a[i], b[i])) return false;
  }
  return true;
}

constexpr TensorSlot kInputs[] = {TensorSlot::kA, TensorSlot::kB, TensorSlot::kCIn, TensorSlot::kSend,
                                  TensorSlot::kAlpha, TensorSlot::kBeta};
constexpr TensorSlot kOutputs[] = {TensorSlot::kCOut, TensorSlot::kRecv};
const char* SlotName(TensorSlot s) {
  static const char* const kNames[] = {"A", "B", "C0", "C", "send", "recv", "alpha", "beta"};
  return kNames[static_cast<int>(s)];
}

// The first slot whose captured bytes differ; nullptr when all agree. `missing` is set when a slot is captured on
// one side only.
const char* FirstDifference(const Op& a, const Op& b, const TensorSlot* slots, size_t n, bool* missing) {
  for (size_t i = 0; i < n; ++i) {
    const Tensor *x = a.tensor(slots[i]), *y = b.tensor(slots[i]);
    if ((x == nullptr) != (y == nullptr)) *missing = true;
    if (x != nullptr && y != nullptr && x->data != y->data) return SlotName(slots[i]);
  }
  return nullptr;
}

// max |a − b| over the elements of the slot named `name` (0 when not decodable as numbers).
double SlotMaxAbs(const Op& a, const Op& b, const char* name) {
  std::vector<TensorSlot> slots(std::begin(kInputs), std::end(kInputs));
  slots.insert(slots.end(), std::begin(kOutputs), std::end(kOutputs));
  for (const TensorSlot slot : slots) {
    if (std::string(SlotName(slot)) != name) continue;
    const Tensor *x = a.tensor(slot), *y = b.tensor(slot);
    if (x == nullptr || y == nullptr || x->meta.dtype != y->meta.dtype) return 0;
    const format::DType dt = static_cast<format::DType>(x->meta.dtype);
    return MaxAbsDiff(DecodeAll(dt, y->data), DecodeAll(dt, x->data));
  }
  return 0;
}

void RunBitwise(const TraceSet& ref, const TraceSet& cand, DiffResult* out) {
  CheckReport& rep = out->report;
  size_t max_ops = 0;
  for (const RankTrace& r : ref.ranks) max_ops = std::max(max_ops, r.ops.size());
  std::vector<bool> has_last(ref.ranks.size(), false), diverged(ref.ranks.size(), false);
  std::vector<OpName> last(ref.ranks.size());
  for (size_t i = 0; i < max_ops; ++i)
    for (size_t r = 0; r < ref.ranks.size(); ++r) {
      if (i >= ref.ranks[r].ops.size()) continue;
      const Op &a = ref.ranks[r].ops[i], &b = cand.ranks[r].ops[i];
      const OpName name{cand.ranks[r].rank(), b.seq, b.api_name()};
      bool missing = false;
      const char* in = FirstDifference(a, b, kInputs, std::size(kInputs), &missing);
      const char* outp = FirstDifference(a, b, kOutputs, std::size(kOutputs), &missing);
      if (missing) {
        rep.AddNotChecked("tensors captured in one run only");
        continue;
      }
      const bool any = a.tensor(TensorSlot::kCOut) != nullptr || a.tensor(TensorSlot::kRecv) != nullptr;
      if (!any) {
        rep.AddNotChecked(a.MissingTensorsReason());
        continue;
      }
      ElementStats stats;
      stats.elements = 1;
      rep.AddChecked("diff.bitwise", name, stats, in == nullptr && outp == nullptr);
      if (in == nullptr && outp == nullptr) {
        has_last[r] = true;
        last[r] = name;
        continue;
      }
      if (diverged[r]) continue;
      diverged[r] = true;
      const bool inside = in == nullptr;
      Finding f;
      f.check = inside ? "diff.inside" : "diff.between";
      f.rank = name.rank;
      f.seq = name.seq;
      f.api = name.api;
      f.model = "bitwise";
      f.max_abs_err = SlotMaxAbs(a, b, inside ? outp : in);
      f.message = inside ? absl::StrCat("inside divergence: inputs identical to the reference's, output ", outp,
                                        " differs (same layout: bitwise comparison)")
                         : absl::StrCat("between divergence: input ", in, " already differs from the reference's",
                                        has_last[r] ? absl::StrCat("; last matching op: seq ", last[r].seq, " ",
                                                                   last[r].api)
                                                    : std::string("; no earlier op matched"));
      rep.AddFinding(f);
      if (!out->first.valid) {
        Divergence& d = out->first;
        d.valid = true;
        d.op = name;
        d.ref_seq = static_cast<int64_t>(a.seq);
        d.operand = inside ? outp : in;
        d.kind = inside ? "inside" : "between";
        d.has_last_matching = has_last[r];
        d.last_matching = last[r];
        d.model = "bitwise";
        d.ratio = std::numeric_limits<double>::infinity();
      }
    }
}

}  // namespace

DiffResult RunDiff(const TraceSet& ref, const TraceSet& cand, const DiffOptions& options) {
  DiffResult out;
  CheckSummary& s = out.report.summary();
  s.title = "ttrace diff " + ref.dir + " vs";
  s.dir = cand.dir;
  s.job = cand.job;
  s.world_size = cand.world_size;
  s.streams = static_cast<int>(cand.ranks.size());
  for (const RankTrace& r : cand.ranks) s.ops += r.ops.size();
  for (const TraceSet* t : {&ref, &cand}) {
    for (const RankTrace& r : t->ranks)
      if (!r.ended) out.report.AddGap(absl::StrCat(t == &ref ? "reference" : "candidate", " rank ", r.rank(),
                                                   "'s stream has no end record"));
    if (t->missing_rank_count > 0)
      out.report.AddGap(absl::StrCat(t == &ref ? "reference: " : "candidate: ", t->missing_rank_count,
                                     " ranks missing"));
  }
  if (SameLayout(ref, cand)) {
    out.mode = "bitwise";
    RunBitwise(ref, cand, &out);
  } else if (ref.ranks.size() == 1) {
    out.mode = "sharded";
    RunShardedDiff(ref, cand, options, &out);
  } else {
    out.mode = "unsupported";
    out.report.AddNotChecked("reference has several ranks and another layout", s.ops);
  }
  out.report.Finish();
  AttachContexts(cand, &out.report);
  if (out.first.valid)
    if (const Op* op = FindOp(cand, out.first.op.rank, out.first.op.seq)) out.first.context = op->context;
  return out;
}

std::string DiffToJson(const DiffResult& result) {
  return ReportToJson(result.report, &result.first, result.mode);
}

void PrintDiff(const DiffResult& result, std::ostream& out) {
  out << "ttrace diff (" << result.mode << " mode)\n";
  PrintReport(result.report, out);
  const CalibrationUse& c = result.calibration;
  if (c.used)
    out << "calibration: " << c.operands << " input operands judged by diff.calibrated (K = "
        << FormatNumber(c.multiple) << "); largest err/threshold " << FormatNumber(c.max_ratio)
        << (c.operands > 0 ? absl::StrCat(" (", FormatNumber(c.max_ratio_err_eps), " eps) at rank ",
                                          c.max_ratio_op.rank, " seq ", c.max_ratio_op.seq, " ", c.max_ratio_op.api)
                           : std::string())
        << "\n";
  const Divergence& d = result.first;
  if (!d.valid) return;
  out << "first divergence: " << d.kind << " rank " << d.op.rank << " seq " << d.op.seq << " " << d.op.api
      << " (reference seq " << d.ref_seq << "), operand " << d.operand;
  if (d.model != "bitwise")
    out << ", error " << FormatNumber(d.err_eps) << " eps, " << FormatNumber(d.ratio) << " x the " << d.model
        << " threshold";
  out << "\n";
  if (d.kind == "between")
    out << "  last matching op: "
        << (d.has_last_matching ? absl::StrCat("rank ", d.last_matching.rank, " seq ", d.last_matching.seq, " ",
                                               d.last_matching.api)
                                : std::string("none (the first compared op already differs)"))
        << "; code between the two ops changed the data\n";
  if (d.context.valid) out << "  context: " << ContextText(d.context) << "\n";
}

}  // namespace ttrace::analyzer
