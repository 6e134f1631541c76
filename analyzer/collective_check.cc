// One generic check for every row of the semantics table (ttrace/collectives.h): the table says which buffers
// each member has and where each output element comes from, this file only does the arithmetic. Members of a
// collective are found by (comm_hash, comm_op_index), never by seq: seq numbers differ across ranks whenever
// ranks issue different GEMMs. Point-to-point calls are paired by (comm_hash, sender, receiver, index), the
// shim's per-peer counters, since NCCL matches the k-th send from a to b with the k-th receive at b from a.
// Floating-point reductions are compared through ElementStats against the FP64 reduction; integer types are
// reduced with the type's own wrap-around arithmetic (and C division for avg, as NCCL's FuncSumPostDiv does) and
// compared exactly; copies (gathers, broadcasts, scatters, all-to-all, receives) are compared bitwise.
#include "analyzer/collective_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "analyzer/tensor_data.h"
#include "ttrace/collectives.h"

namespace ttrace::analyzer {

using format::CollectiveInfo;
using format::CollectiveResult;
using format::DType;
using format::TensorSlot;

namespace {

struct Member {
  int rank;
  const Op* op;
  const Tensor* send = nullptr;  // null when the table says this rank has no such buffer
  const Tensor* recv = nullptr;
  int32_t comm_rank() const { return op->coll.comm_rank; }
};

// api, count, dtype, op, comm size, root (peers differ by design and are not compared)
using Args = std::tuple<uint16_t, uint64_t, int32_t, uint8_t, int32_t, int32_t>;
Args ArgsOf(const Member& m) {
  const auto& c = m.op->coll;
  const CollectiveInfo* row = format::FindCollective(c.api);
  const bool rooted = row != nullptr && row->param == format::CollectiveParam::kRoot;
  return {c.api, c.count, c.nccl_dtype, c.red_op, c.comm_size, rooted ? c.root_or_peer : -1};
}

std::string ArgsText(const Args& a) {
  std::string s = absl::StrCat(format::ApiName(std::get<0>(a)), " count=", std::get<1>(a), " dtype=",
                               NcclTypeName(std::get<2>(a)));
  if (std::get<3>(a) != 0xff) absl::StrAppend(&s, " op=", static_cast<int>(std::get<3>(a)));
  if (std::get<5>(a) >= 0) absl::StrAppend(&s, " root=", std::get<5>(a));
  absl::StrAppend(&s, " comm_size=", std::get<4>(a));
  return s;
}

OpName NameOf(const Member& m) { return {m.rank, m.op->seq, m.op->api_name()}; }

std::string Where(const format::CollectiveRecord& c) {
  return absl::StrCat("collective #", c.comm_op_index, " on communicator ", absl::Hex(c.comm_hash));
}

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

// The reducing rows: output element j of each receiving member against the reduction of every member's input
// element ReducedIndex(j). The reference is recomputed only when that index changes (all-reduce and reduce
// share it across receivers). dist[r] accumulates Σ|got - ref| (Inf when not finite), for attribution.
struct ReduceCompare {
  CollectiveResult result;
  ReduceOp op;
  DType dtype;
  uint64_t count;
  const std::vector<Member>* members;

  template <typename Reference, typename Compare>
  void ForEach(const Reference& reference, const Compare& compare) const {
    uint64_t last = UINT64_MAX;
    for (uint64_t j = 0; j < count; ++j) {
      for (size_t r = 0; r < members->size(); ++r) {
        const Member& m = (*members)[r];
        if (m.recv == nullptr) continue;
        const uint64_t idx = format::ReducedIndex(result, count, m.comm_rank(), j);
        if (idx != last) reference(idx);
        last = idx;
        compare(r, j);
      }
      if (result == CollectiveResult::kReduceChunk) last = UINT64_MAX;
    }
  }

  template <typename T>
  void Ints(std::vector<ElementStats>* st) const {
    std::vector<T> vals(members->size());
    T ref{};
    ForEach(
        [&](uint64_t idx) {
          for (size_t k = 0; k < members->size(); ++k) vals[k] = LoadInt<T>((*members)[k].send->data, idx);
          ref = IntReduce(op, vals);
        },
        [&](size_t r, uint64_t j) {
          const T got = LoadInt<T>((*members)[r].recv->data, j);
          (*st)[r].AddExact(j, static_cast<double>(got), static_cast<double>(ref), got == ref);
        });
  }

  void Floats(std::vector<ElementStats>* st, std::vector<double>* dist) const {
    const ReduceBound rb(FormatOf(dtype), op, static_cast<int>(members->size()));
    const bool extremum = op == ReduceOp::kMax || op == ReduceOp::kMin;
    std::vector<double> vals(members->size());
    ReduceElementTerms t;
    double bound = 0;
    bool overflow = false, any_nan = false;
    ForEach(
        [&](uint64_t idx) {
          any_nan = false;
          for (size_t k = 0; k < members->size(); ++k) {
            vals[k] = DecodeElement(dtype, (*members)[k].send->data.data(), idx);
            any_nan = any_nan || std::isnan(vals[k]);
          }
          t = ReduceReference(op, vals);
          bound = rb.Bound(t);
          overflow = rb.OverflowPossible(t);
        },
        [&](size_t r, uint64_t j) {
          const double got = DecodeElement(dtype, (*members)[r].recv->data.data(), j);
          if (extremum && any_nan) {
            // NaN ordering is implementation-defined: NaN or any input value is a correct answer.
            const bool ok = std::isnan(got) || std::find(vals.begin(), vals.end(), got) != vals.end();
            (*st)[r].AddExact(j, got, t.ref, ok);
          } else {
            (*st)[r].Add(j, got, t.ref, bound, overflow);
          }
          (*dist)[r] += std::isfinite(got) && std::isfinite(t.ref)
                            ? std::fabs(got - t.ref)
                            : (std::isnan(got) == std::isnan(t.ref) && (std::isnan(got) || got == t.ref) ? 0
                                                                                                         : HUGE_VAL);
        });
  }
};

// The copying rows: output element j of each receiving member bitwise against the input element it copies.
void CompareCopies(CollectiveResult result, DType dtype, uint64_t count, int32_t root,
                   const std::vector<Member>& members, std::vector<ElementStats>* st) {
  const uint32_t es = format::DTypeSize(static_cast<uint8_t>(dtype));
  for (size_t r = 0; r < members.size(); ++r) {
    const Member& m = members[r];
    if (m.recv == nullptr) continue;
    const uint64_t n = m.recv->data.size() / es;
    for (uint64_t j = 0; j < n; ++j) {
      const format::ElementSource s = format::SourceOf(result, count, m.comm_rank(), root, j);
      const char* want = members[static_cast<size_t>(s.source)].send->data.data() + s.index * es;
      const char* got = m.recv->data.data() + j * es;
      const bool same = memcmp(want, got, es) == 0;
      (*st)[r].AddExact(j, DecodeElement(dtype, got, 0), DecodeElement(dtype, want, 0), same);
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
bool CheckArgs(const std::vector<Member>& members, const std::string& kind, CheckReport* report) {
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
    Finding f = BaseFinding(m, kind + ".args");
    f.message = absl::StrCat("arguments differ from the other ranks of ", Where(m.op->coll), ": ",
                             ArgsText(ArgsOf(m)), " vs ", ArgsText(majority));
    report->AddChecked(kind, NameOf(m), ElementStats{}, false);
    report->AddFinding(std::move(f));
  }
  report->AddNotChecked("arguments differ across ranks", agreeing);
  return false;
}

// Finds the members' buffers as the table says; the not-checked reason, or "" when every one is there.
std::string AttachTensors(const CollectiveInfo& row, DType dtype, std::vector<Member>* members,
                          CheckReport* report) {
  const format::CollectiveRecord& c0 = members->front().op->coll;
  for (Member& m : *members) {
    if (!m.op->tensor_problem.empty()) return "tensor unusable";
    uint64_t send_n = 0, recv_n = 0;
    if (!format::ExtentElements(row.send, c0.count, c0.comm_size, m.comm_rank(), c0.root_or_peer, &send_n) ||
        !format::ExtentElements(row.recv, c0.count, c0.comm_size, m.comm_rank(), c0.root_or_peer, &recv_n))
      return "shape mismatch";
    for (auto [slot, n, out] : {std::make_tuple(TensorSlot::kSend, send_n, &m.send),
                                std::make_tuple(TensorSlot::kRecv, recv_n, &m.recv)}) {
      if (n == 0) continue;
      *out = m.op->tensor(slot);
      if (*out == nullptr) return m.op->MissingTensorsReason();
      const unsigned __int128 want = static_cast<unsigned __int128>(n) * format::DTypeSize(static_cast<uint8_t>(dtype));
      if ((*out)->meta.dtype != static_cast<uint8_t>(dtype) || (*out)->data.size() != want) {
        report->Warn(absl::StrCat("rank ", m.rank, " seq ", m.op->seq, " ", m.op->api_name(), ": captured ",
                                  slot == TensorSlot::kSend ? "send" : "receive", " buffer does not hold ", n, " ",
                                  NcclTypeName(c0.nccl_dtype)));
        return "shape mismatch";
      }
    }
  }
  return "";
}

// Blames members: those violating the check, and for rows whose outputs NCCL makes bitwise identical, those
// outside a strict majority of identical outputs (3+ members) or, when no member violates and there is no
// majority, those farthest from the FP64 reference. Then one finding per blamed member.
void Report(const CollectiveInfo& row, DType dtype, ErrorModelId model, const std::vector<Member>& members,
            const std::vector<ElementStats>& st, const std::vector<double>& dist, CheckReport* report) {
  const format::CollectiveRecord& c0 = members.front().op->coll;
  std::vector<int> cls(members.size(), -1);
  std::vector<size_t> rep, size;
  if (row.identical) {
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

  const bool reduces = row.reduces();
  const ReduceOp op = static_cast<ReduceOp>(c0.red_op);
  const std::string what =
      reduces ? absl::StrCat(ReduceOpName(op), " of ", members.size(), " ranks, ", c0.count, " ",
                             NcclTypeName(c0.nccl_dtype))
              : absl::StrCat(members.size(), " ranks, count ", c0.count, " ", NcclTypeName(c0.nccl_dtype));
  for (size_t r = 0; r < members.size(); ++r) {
    const OpName name = NameOf(members[r]);
    report->AddChecked(row.check, name, st[r], !wrong[r]);
    if (!wrong[r]) continue;
    const bool violates = st[r].violations > 0;
    Finding f = BaseFinding(members[r], std::string(row.check) + (!violates ? ".identical"
                                                                  : reduces ? ".bound"
                                                                            : ".exact"));
    f.model = GetErrorModel(model).name;
    FillStats(st[r], &f);
    f.detail = absl::StrCat(what, ", ", Where(c0));
    const uint64_t n = members[r].recv->data.size() / format::DTypeSize(static_cast<uint8_t>(dtype));
    if (violates && reduces) {
      f.message = absl::StrCat(st[r].violations, " of ", n, " output elements differ from the FP64 ",
                               ReduceOpName(op), " of all ranks' inputs beyond the bound; first at element ",
                               st[r].first_index, ": got ", FormatNumber(st[r].first_got), ", expected ",
                               FormatNumber(st[r].first_ref), " (bound ", FormatNumber(st[r].first_bound), ")");
    } else if (violates) {
      const format::ElementSource s = format::SourceOf(row.result, c0.count, members[r].comm_rank(),
                                                       c0.root_or_peer, st[r].first_index);
      f.message = absl::StrCat(st[r].violations, " of ", n, " output elements are not the input elements they copy;",
                               " first at element ", st[r].first_index, ": got ", FormatNumber(st[r].first_got),
                               ", expected ", FormatNumber(st[r].first_ref), " (element ", s.index, " of rank ",
                               members[static_cast<size_t>(s.source)].rank, "'s input)");
    } else {
      const Member& other = members[ref_member != r ? ref_member : (r == 0 ? 1 : 0)];  // all blamed: another
      const uint32_t esize = format::DTypeSize(static_cast<uint8_t>(dtype));
      uint64_t differ = 0, first = 0;
      for (uint64_t e = 0; e < n; ++e) {
        if (memcmp(members[r].recv->data.data() + e * esize, other.recv->data.data() + e * esize, esize) != 0) {
          if (differ++ == 0) first = e;
        }
      }
      f.violations = differ;
      f.has_element = differ > 0;
      f.first = {first, static_cast<int64_t>(first), 0, 0,
                 DecodeElement(dtype, members[r].recv->data.data(), first),
                 DecodeElement(dtype, other.recv->data.data(), first), 0};
      f.message = absl::StrCat("output not bitwise identical across ranks: ", differ, " of ", n,
                               " elements differ from rank ", other.rank, "'s (",
                               majority >= 0 ? absl::StrCat(size[static_cast<size_t>(majority)], " of ",
                                                            members.size(), " ranks agree)")
                                             : "no majority: this output is farther from the FP64 reference)",
                               "; all outputs are within the bound");
    }
    report->AddFinding(std::move(f));
  }
}

void CheckGroup(std::vector<Member> members, CheckReport* report) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.comm_rank() < b.comm_rank(); });
  const size_t count_members = members.size();
  auto skip = [&](const std::string& reason) { report->AddNotChecked(reason, count_members); };
  for (const Member& m : members)
    if (m.op->coll.status != 0) return skip("call failed");
  for (size_t i = 1; i < members.size(); ++i) {
    if (members[i].comm_rank() == members[i - 1].comm_rank()) {
      report->Warn(absl::StrCat(Where(members[i].op->coll), ": comm rank ", members[i].comm_rank(),
                                " appears twice (ranks ", members[i - 1].rank, ", ", members[i].rank, ")"));
      return skip("inconsistent communicator");
    }
  }
  const format::CollectiveRecord& c0 = members.front().op->coll;
  const CollectiveInfo* row = format::FindCollective(c0.api);
  if (!CheckArgs(members, row != nullptr ? row->check : "collective", report)) return;
  if (row == nullptr || row->point_to_point()) return skip(absl::StrCat("no check for ", format::ApiName(c0.api)));
  if (static_cast<int>(members.size()) < c0.comm_size) return skip("incomplete collective (ranks missing)");
  if (static_cast<int>(members.size()) > c0.comm_size || members.back().comm_rank() >= c0.comm_size ||
      members.front().comm_rank() < 0)
    return skip("inconsistent communicator");
  if (row->param == format::CollectiveParam::kRoot && (c0.root_or_peer < 0 || c0.root_or_peer >= c0.comm_size))
    return skip("root outside the communicator");
  if (row->reduces() && c0.red_op > 4) return skip("unknown reduction op");
  const DType dtype = DTypeFromNccl(c0.nccl_dtype);
  if (dtype == DType::kInvalid) return skip("no error model");
  const std::string missing = AttachTensors(*row, dtype, &members, report);
  if (!missing.empty()) return skip(missing);

  std::vector<ElementStats> st(members.size());
  std::vector<double> dist(members.size(), 0.0);
  ErrorModelId model = ErrorModelId::kExact;
  if (row->reduces()) {
    const ReduceOp op = static_cast<ReduceOp>(c0.red_op);
    const ReduceCompare cmp{row->result, op, dtype, c0.count, &members};
    switch (dtype) {
      case DType::kI8: cmp.Ints<int8_t>(&st); break;
      case DType::kU8: cmp.Ints<uint8_t>(&st); break;
      case DType::kI32: cmp.Ints<int32_t>(&st); break;
      case DType::kU32: cmp.Ints<uint32_t>(&st); break;
      case DType::kI64: cmp.Ints<int64_t>(&st); break;
      case DType::kU64: cmp.Ints<uint64_t>(&st); break;
      default:
        cmp.Floats(&st, &dist);
        model = ReduceBound(FormatOf(dtype), op, static_cast<int>(members.size())).model();
        break;
    }
  } else {
    CompareCopies(row->result, dtype, c0.count, c0.root_or_peer, members, &st);
  }
  Report(*row, dtype, model, members, st, dist, report);
}

// ---- point-to-point ----------------------------------------------------------------------------------------

struct P2pPair {
  std::vector<Member> sends, recvs;  // one of each when the trace is whole
};
using P2pKey = std::tuple<uint64_t, int32_t, int32_t, uint64_t>;  // comm, sender, receiver, index

// The receive must hold exactly what the matching send sent: same count and dtype, every byte. A mismatch is the
// receiving rank's finding (its output is wrong), naming the sender.
void CheckPair(const P2pPair& p, CheckReport* report) {
  const size_t ops = p.sends.size() + p.recvs.size();
  if (p.sends.size() != 1 || p.recvs.size() != 1) {
    report->AddNotChecked(ops > 2 ? "inconsistent communicator" : "point-to-point partner missing", ops);
    return;
  }
  const Member& s = p.sends[0];
  const Member& r = p.recvs[0];
  const format::CollectiveRecord &cs = s.op->coll, &cr = r.op->coll;
  if (cs.status != 0 || cr.status != 0) return report->AddNotChecked("call failed", 2);
  const std::string pair = absl::StrCat("send #", cs.comm_op_index, " from comm rank ", cs.comm_rank,
                                        " to comm rank ", cr.comm_rank, " on communicator ",
                                        absl::Hex(cs.comm_hash));
  Finding f = BaseFinding(r, "sendrecv.match");
  f.model = GetErrorModel(ErrorModelId::kExact).name;
  f.detail = pair;
  if (cs.count != cr.count || cs.nccl_dtype != cr.nccl_dtype) {
    f.message = absl::StrCat("receive of ", cr.count, " ", NcclTypeName(cr.nccl_dtype), " matched with rank ",
                             s.rank, "'s ", pair, " of ", cs.count, " ", NcclTypeName(cs.nccl_dtype));
    report->AddChecked("sendrecv", NameOf(s), ElementStats{}, true);
    report->AddChecked("sendrecv", NameOf(r), ElementStats{}, false);
    report->AddFinding(std::move(f));
    return;
  }
  const DType dtype = DTypeFromNccl(cr.nccl_dtype);
  if (dtype == DType::kInvalid) return report->AddNotChecked("no error model", 2);
  for (const Member* m : {&s, &r})
    if (!m->op->tensor_problem.empty()) return report->AddNotChecked("tensor unusable", 2);
  const Tensor* in = s.op->tensor(TensorSlot::kSend);
  const Tensor* out = r.op->tensor(TensorSlot::kRecv);
  if (cs.count > 0 && (in == nullptr || out == nullptr))
    return report->AddNotChecked((in == nullptr ? s : r).op->MissingTensorsReason(), 2);
  ElementStats st;
  if (cs.count > 0) {
    const uint32_t es = format::DTypeSize(static_cast<uint8_t>(dtype));
    if (in->data.size() != out->data.size() || in->data.size() != static_cast<unsigned __int128>(cs.count) * es)
      return report->AddNotChecked("shape mismatch", 2);
    for (uint64_t j = 0; j < cs.count; ++j) {
      const char* a = in->data.data() + j * es;
      const char* b = out->data.data() + j * es;
      st.AddExact(j, DecodeElement(dtype, b, 0), DecodeElement(dtype, a, 0), memcmp(a, b, es) == 0);
    }
  }
  report->AddChecked("sendrecv", NameOf(s), ElementStats{}, true);
  report->AddChecked("sendrecv", NameOf(r), st, st.violations == 0);
  if (st.violations == 0) return;
  FillStats(st, &f);
  f.message = absl::StrCat(st.violations, " of ", cs.count, " received elements differ from what rank ", s.rank,
                           " sent (", pair, "); first at element ", st.first_index, ": got ",
                           FormatNumber(st.first_got), ", sent ", FormatNumber(st.first_ref));
  report->AddFinding(std::move(f));
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

struct CollectivePlan::Unit {
  std::vector<Member> members;  // a group's members, or
  P2pPair pair;                 // a point-to-point pair's
  bool is_pair = false;
  std::vector<const Op*> ops;
};

CollectivePlan::CollectivePlan(const TraceSet& set) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Member>> groups;
  std::map<P2pKey, P2pPair> pairs;
  for (const RankTrace& t : set.ranks) {
    for (const Op& op : t.ops) {
      if (op.kind != OpKind::kCollective) continue;
      const format::CollectiveRecord& c = op.coll;
      const CollectiveInfo* row = format::FindCollective(c.api);
      if (row != nullptr && row->point_to_point()) {
        const bool send = row->result == CollectiveResult::kSend;
        P2pPair& p = pairs[{c.comm_hash, send ? c.comm_rank : c.root_or_peer, send ? c.root_or_peer : c.comm_rank,
                            c.comm_op_index}];
        (send ? p.sends : p.recvs).push_back(Member{t.rank(), &op});
      } else {
        groups[{c.comm_hash, c.comm_op_index}].push_back(Member{t.rank(), &op});
      }
    }
  }
  for (auto& [key, members] : groups) {
    Unit u;
    for (const Member& m : members) u.ops.push_back(m.op);
    u.members = std::move(members);
    units_.push_back(std::move(u));
  }
  for (auto& [key, pair] : pairs) {
    Unit u;
    u.is_pair = true;
    for (const auto* side : {&pair.sends, &pair.recvs})
      for (const Member& m : *side) u.ops.push_back(m.op);
    u.pair = std::move(pair);
    units_.push_back(std::move(u));
  }
}

CollectivePlan::~CollectivePlan() = default;

size_t CollectivePlan::size() const { return units_.size(); }

const std::vector<const Op*>& CollectivePlan::ops(size_t unit) const { return units_[unit].ops; }

void CollectivePlan::Check(size_t unit, CheckReport* report) const {
  const Unit& u = units_[unit];
  if (u.is_pair) return CheckPair(u.pair, report);
  CheckGroup(u.members, report);
}

void CheckCollectives(const TraceSet& set, CheckReport* report, const std::function<void(uint64_t)>& progress) {
  const CollectivePlan plan(set);
  uint64_t done = 0;
  for (size_t u = 0; u < plan.size(); ++u) {
    done += plan.ops(u).size();
    plan.Check(u, report);
    if (progress) progress(done);
  }
}

}  // namespace ttrace::analyzer
