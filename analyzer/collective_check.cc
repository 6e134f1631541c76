// Members of a collective are found by (comm_hash, comm_op_index), never by seq: seq numbers differ across ranks
// whenever ranks issue different GEMMs. Floating-point values are compared through ElementStats against the FP64
// reduction; integer types are reduced with the type's own wrap-around arithmetic (and C division for avg, as
// NCCL's FuncSumPostDiv does) and compared exactly.
#include "analyzer/collective_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

namespace {

struct Member {
  int rank;
  const Op* op;
  const Tensor* send = nullptr;
  const Tensor* recv = nullptr;
};

using Args = std::tuple<uint16_t, uint64_t, int32_t, uint8_t, int32_t>;  // api, count, dtype, op, comm size
Args ArgsOf(const Member& m) {
  const auto& c = m.op->coll;
  return {c.api, c.count, c.nccl_dtype, c.red_op, c.comm_size};
}

std::string ArgsText(const Args& a) {
  return absl::StrCat(format::ApiName(std::get<0>(a)), " count=", std::get<1>(a), " dtype=",
                      NcclTypeName(std::get<2>(a)), " op=", static_cast<int>(std::get<3>(a)), " comm_size=",
                      std::get<4>(a));
}

OpName NameOf(const Member& m) { return {m.rank, m.op->seq, m.op->api_name()}; }

template <typename T>
T IntReduce(ReduceOp op, const std::vector<T>& v) {
  using U = std::make_unsigned_t<T>;
  U acc = op == ReduceOp::kProd ? U{1} : U{0};
  T best = v.empty() ? T{0} : v[0];
  for (T x : v) {
    if (op == ReduceOp::kProd) {
      acc = static_cast<U>(acc * static_cast<U>(x));
    } else {
      acc = static_cast<U>(acc + static_cast<U>(x));
    }
    if (op == ReduceOp::kMax) best = std::max(best, x);
    if (op == ReduceOp::kMin) best = std::min(best, x);
  }
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) return best;
  T r = static_cast<T>(acc);
  if (op == ReduceOp::kAvg) r = static_cast<T>(r / static_cast<int64_t>(v.size()));
  return r;
}

template <typename T>
T LoadInt(const std::string& data, uint64_t i) {
  T v;
  memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
  return v;
}

// Integer all-reduce: exact comparison of every member's output with the wrap-around reduction.
template <typename T>
void CompareInts(ReduceOp op, const std::vector<Member>& members, uint64_t count, std::vector<ElementStats>* st) {
  std::vector<T> vals(members.size());
  for (uint64_t e = 0; e < count; ++e) {
    for (size_t r = 0; r < members.size(); ++r) vals[r] = LoadInt<T>(members[r].send->data, e);
    const T ref = IntReduce(op, vals);
    for (size_t r = 0; r < members.size(); ++r) {
      const T got = LoadInt<T>(members[r].recv->data, e);
      (*st)[r].AddExact(e, static_cast<double>(got), static_cast<double>(ref), got == ref);
    }
  }
}

// Floating-point all-reduce against the FP64 reduction; dist[r] accumulates Σ|got - ref| (Inf when not finite).
void CompareFloats(ReduceOp op, DType dtype, const std::vector<Member>& members, uint64_t count,
                   std::vector<ElementStats>* st, std::vector<double>* dist) {
  const int n = static_cast<int>(members.size());
  const ReduceBound rb(FormatOf(dtype), op, n);
  std::vector<double> vals(members.size());
  const bool extremum = op == ReduceOp::kMax || op == ReduceOp::kMin;
  for (uint64_t e = 0; e < count; ++e) {
    bool any_nan = false;
    for (size_t r = 0; r < members.size(); ++r) {
      vals[r] = DecodeElement(dtype, members[r].send->data.data(), e);
      any_nan = any_nan || std::isnan(vals[r]);
    }
    const ReduceElementTerms t = ReduceReference(op, vals);
    const double bound = rb.Bound(t);
    const bool overflow = rb.OverflowPossible(t);
    for (size_t r = 0; r < members.size(); ++r) {
      const double got = DecodeElement(dtype, members[r].recv->data.data(), e);
      if (extremum && any_nan) {
        // NaN ordering is implementation-defined: NaN or any input value is a correct answer.
        const bool ok = std::isnan(got) || std::find(vals.begin(), vals.end(), got) != vals.end();
        (*st)[r].AddExact(e, got, t.ref, ok);
      } else {
        (*st)[r].Add(e, got, t.ref, bound, overflow);
      }
      (*dist)[r] += std::isfinite(got) && std::isfinite(t.ref) ? std::fabs(got - t.ref)
                                                                 : (std::isnan(got) == std::isnan(t.ref) &&
                                                                            (std::isnan(got) || got == t.ref)
                                                                        ? 0
                                                                        : HUGE_VAL);
    }
  }
}

Finding BaseFinding(const Member& m, const std::string& check) {
  Finding f;
  f.check = check;
  f.rank = m.rank;
  f.seq = m.op->seq;
  f.api = m.op->api_name();
  return f;
}

void FillStats(const ElementStats& s, Finding* f) {
  f->max_abs_err = s.max_abs_err;
  f->max_rel_err = s.max_rel_err;
  f->threshold = s.worst_bound;
  f->ratio = s.worst_ratio;
  f->elements = s.elements;
  f->violations = s.violations;
  if (s.has_violation) {
    f->has_element = true;
    f->first = {s.first_index, static_cast<int64_t>(s.first_index), 0, 0, s.first_got, s.first_ref, s.first_bound};
  }
}

// Members whose argument tuple differs from the majority's (ties: the lowest comm rank's) are findings.
bool CheckArgs(const std::vector<Member>& members, CheckReport* report) {
  std::map<Args, int> votes;
  for (const Member& m : members) ++votes[ArgsOf(m)];
  if (votes.size() == 1) return true;
  Args majority = ArgsOf(members.front());
  for (const Member& m : members)  // ascending comm rank: a later tuple wins only with more votes
    if (votes[ArgsOf(m)] > votes[majority]) majority = ArgsOf(m);
  uint64_t agreeing = 0;
  for (const Member& m : members) {
    if (ArgsOf(m) == majority) {
      ++agreeing;
      continue;
    }
    Finding f = BaseFinding(m, "allreduce.args");
    f.message = absl::StrCat("arguments differ from the other ranks of collective #", m.op->coll.comm_op_index,
                             " on communicator ", absl::Hex(m.op->coll.comm_hash), ": ", ArgsText(ArgsOf(m)),
                             " vs ", ArgsText(majority));
    report->AddChecked("allreduce", NameOf(m), ElementStats{}, false);
    report->AddFinding(std::move(f));
  }
  report->AddNotChecked("arguments differ across ranks", agreeing);
  return false;
}

void CheckGroup(std::vector<Member> members, CheckReport* report) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.op->coll.comm_rank < b.op->coll.comm_rank; });
  const size_t count_members = members.size();
  auto skip = [&](const std::string& reason) { report->AddNotChecked(reason, count_members); };
  for (const Member& m : members)
    if (m.op->coll.status != 0) return skip("call failed");
  for (size_t i = 1; i < members.size(); ++i) {
    if (members[i].op->coll.comm_rank == members[i - 1].op->coll.comm_rank) {
      report->Warn(absl::StrCat("collective #", members[i].op->coll.comm_op_index, " on communicator ",
                                absl::Hex(members[i].op->coll.comm_hash), ": comm rank ",
                                members[i].op->coll.comm_rank, " appears twice (ranks ", members[i - 1].rank, ", ",
                                members[i].rank, ")"));
      return skip("inconsistent communicator");
    }
  }
  if (!CheckArgs(members, report)) return;
  const format::CollectiveRecord& c0 = members.front().op->coll;
  if (c0.api != static_cast<uint16_t>(format::ApiId::kNcclAllReduce))
    return skip(absl::StrCat("no check for ", format::ApiName(c0.api), " yet"));
  if (static_cast<int>(members.size()) < c0.comm_size) return skip("incomplete collective (ranks missing)");
  if (static_cast<int>(members.size()) > c0.comm_size || members.back().op->coll.comm_rank >= c0.comm_size ||
      members.front().op->coll.comm_rank < 0)
    return skip("inconsistent communicator");
  if (c0.red_op > 4) return skip("unknown reduction op");
  const DType dtype = DTypeFromNccl(c0.nccl_dtype);
  if (dtype == DType::kInvalid) return skip("no error model");
  for (Member& m : members) {
    if (!m.op->tensor_problem.empty()) return skip("tensor unusable");
    m.send = m.op->tensor(TensorSlot::kSend);
    m.recv = m.op->tensor(TensorSlot::kRecv);
    if (m.send == nullptr || m.recv == nullptr) return skip(m.op->MissingTensorsReason());
    const unsigned __int128 want =
        static_cast<unsigned __int128>(c0.count) * format::DTypeSize(static_cast<uint8_t>(dtype));
    if (m.send->meta.dtype != static_cast<uint8_t>(dtype) || m.recv->meta.dtype != static_cast<uint8_t>(dtype) ||
        m.send->data.size() != want || m.recv->data.size() != want) {
      report->Warn(absl::StrCat("rank ", m.rank, " seq ", m.op->seq, " ", m.op->api_name(),
                                ": captured buffers do not hold ", c0.count, " ", NcclTypeName(c0.nccl_dtype)));
      return skip("shape mismatch");
    }
  }
  const ReduceOp op = static_cast<ReduceOp>(c0.red_op);
  const uint64_t count = c0.count;
  std::vector<ElementStats> st(members.size());
  std::vector<double> dist(members.size(), 0.0);
  ErrorModelId model = ErrorModelId::kExact;
  switch (dtype) {
    case DType::kI8: CompareInts<int8_t>(op, members, count, &st); break;
    case DType::kU8: CompareInts<uint8_t>(op, members, count, &st); break;
    case DType::kI32: CompareInts<int32_t>(op, members, count, &st); break;
    case DType::kU32: CompareInts<uint32_t>(op, members, count, &st); break;
    case DType::kI64: CompareInts<int64_t>(op, members, count, &st); break;
    case DType::kU64: CompareInts<uint64_t>(op, members, count, &st); break;
    default:
      CompareFloats(op, dtype, members, count, &st, &dist);
      model = ReduceBound(FormatOf(dtype), op, static_cast<int>(members.size())).model();
      break;
  }

  // Identity classes by output bytes, and the members to blame.
  std::vector<int> cls(members.size(), -1);
  std::vector<size_t> rep, size;
  for (size_t r = 0; r < members.size(); ++r) {
    for (size_t c = 0; c < rep.size() && cls[r] < 0; ++c)
      if (members[rep[c]].recv->data == members[r].recv->data) cls[r] = static_cast<int>(c);
    if (cls[r] < 0) {
      cls[r] = static_cast<int>(rep.size());
      rep.push_back(r);
      size.push_back(0);
    }
    ++size[static_cast<size_t>(cls[r])];
  }
  int majority = -1;
  if (members.size() >= 3)
    for (size_t c = 0; c < size.size(); ++c)
      if (2 * size[c] > members.size()) majority = static_cast<int>(c);
  std::vector<bool> wrong(members.size(), false);
  bool any_violation = false;
  for (size_t r = 0; r < members.size(); ++r) {
    wrong[r] = st[r].violations > 0;
    any_violation = any_violation || wrong[r];
  }
  if (rep.size() > 1) {
    if (majority >= 0) {
      for (size_t r = 0; r < members.size(); ++r) wrong[r] = wrong[r] || cls[r] != majority;
    } else if (!any_violation) {
      const double far = *std::max_element(dist.begin(), dist.end());
      for (size_t r = 0; r < members.size(); ++r) wrong[r] = dist[r] == far;
    }
  }
  // Reference output for the identity message: the majority's, else the first member not blamed.
  size_t ref_member = majority >= 0 ? rep[static_cast<size_t>(majority)] : 0;
  if (majority < 0)
    for (size_t r = members.size(); r-- > 0;)
      if (!wrong[r]) ref_member = r;

  for (size_t r = 0; r < members.size(); ++r) {
    const OpName name = NameOf(members[r]);
    report->AddChecked("allreduce", name, st[r], !wrong[r]);
    if (!wrong[r]) continue;
    const bool bound = st[r].violations > 0;
    Finding f = BaseFinding(members[r], bound ? "allreduce.bound" : "allreduce.identical");
    f.model = GetErrorModel(model).name;
    FillStats(st[r], &f);
    const std::string what = absl::StrCat(ReduceOpName(op), " of ", members.size(), " ranks, ", count, " ",
                                          NcclTypeName(c0.nccl_dtype));
    f.detail = absl::StrCat(what, ", collective #", c0.comm_op_index, " on communicator ", absl::Hex(c0.comm_hash));
    if (bound) {
      f.message = absl::StrCat(st[r].violations, " of ", count, " output elements differ from the FP64 ",
                               ReduceOpName(op), " of all ranks' inputs beyond the bound; first at element ",
                               st[r].first_index, ": got ", FormatNumber(st[r].first_got), ", expected ",
                               FormatNumber(st[r].first_ref), " (bound ", FormatNumber(st[r].first_bound), ")");
    } else {
      const Member& other = members[ref_member != r ? ref_member : (r == 0 ? 1 : 0)];  // all blamed: another
      const uint32_t esize = format::DTypeSize(static_cast<uint8_t>(dtype));
      uint64_t differ = 0, first = 0;
      for (uint64_t e = 0; e < count; ++e) {
        if (memcmp(members[r].recv->data.data() + e * esize, other.recv->data.data() + e * esize, esize) != 0) {
          if (differ++ == 0) first = e;
        }
      }
      f.violations = differ;
      f.has_element = differ > 0;
      f.first = {first, static_cast<int64_t>(first), 0, 0,
                 DecodeElement(dtype, members[r].recv->data.data(), first),
                 DecodeElement(dtype, other.recv->data.data(), first), 0};
      f.message = absl::StrCat("output not bitwise identical across ranks: ", differ, " of ", count,
                               " elements differ from rank ", other.rank, "'s (",
                               majority >= 0 ? absl::StrCat(size[static_cast<size_t>(majority)], " of ",
                                                            members.size(), " ranks agree)")
                                             : "no majority: this output is farther from the FP64 reference)",
                               "; all outputs are within the bound");
    }
    report->AddFinding(std::move(f));
  }
}

}  // namespace

ReduceElementTerms ReduceReference(ReduceOp op, const std::vector<double>& inputs) {
  ReduceElementTerms t;
  double sum = 0, abs_sum = 0, prod = 1, scale = 1;
  double best = inputs.empty() ? 0 : inputs[0];
  for (double x : inputs) {
    sum += x;
    abs_sum += std::fabs(x);
    prod *= x;
    scale *= std::max(1.0, std::fabs(x));
    if (op == ReduceOp::kMax && x > best) best = x;
    if (op == ReduceOp::kMin && x < best) best = x;
  }
  t.abs_sum = abs_sum;
  t.abs_prod = std::fabs(prod);
  t.prod_scale = scale;
  switch (op) {
    case ReduceOp::kSum: t.ref = sum; break;
    case ReduceOp::kAvg: t.ref = sum / static_cast<double>(inputs.size()); break;
    case ReduceOp::kProd: t.ref = prod; break;
    case ReduceOp::kMax:
    case ReduceOp::kMin: t.ref = best; break;
  }
  return t;
}

void CheckCollectives(const TraceSet& set, CheckReport* report, const std::function<void(uint64_t)>& progress) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Member>> groups;
  for (const RankTrace& t : set.ranks)
    for (const Op& op : t.ops)
      if (op.kind == OpKind::kCollective)
        groups[{op.coll.comm_hash, op.coll.comm_op_index}].push_back(Member{t.rank(), &op});
  uint64_t done = 0;
  for (auto& [key, members] : groups) {
    done += members.size();
    CheckGroup(std::move(members), report);
    if (progress) progress(done);
  }
}

}  // namespace ttrace::analyzer
