// Operands are keyed by pointer rather than by their position in a step because the trace does not say where a
// step begins, and a weight updated in place is the one operand that is read from the same address at every step
// on every replica. Equality is decided on fingerprints (64-bit, order-independent digests) and confirmed element
// by element, with the evidence, only where they differ.
#include "analyzer/replica_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/error_model.h"
#include "analyzer/tensor_data.h"
#include "kernels/fingerprint.h"

namespace ttrace::analyzer {

namespace {

using format::TensorSlot;

// FNV-1a over a record with its rank-specific fields zeroed.
template <typename Record>
uint64_t HashRecord(Record r, uint64_t kind) {
  uint64_t h = 1469598103934665603ull ^ kind;
  const auto* p = reinterpret_cast<const unsigned char*>(&r);
  for (size_t i = 0; i < sizeof r; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool IsConstant(const Tensor& t) {
  const size_t esize = format::DTypeSize(t.meta.dtype);
  const std::string& d = t.data;
  if (esize == 0 || d.size() < esize) return true;
  for (size_t i = esize; i + esize <= d.size(); i += esize)
    if (memcmp(d.data(), d.data() + i, esize) != 0) return false;
  return true;
}

void SetOperand(const Op& op, TensorSlot slot, uint64_t ptr, ReplicaOperand* out) {
  out->slot = static_cast<uint8_t>(slot);
  out->ptr = ptr;
  const Tensor* t = op.tensor(slot);
  if (t == nullptr || t->data.empty()) return;
  out->present = true;
  out->tensor = t;
  out->constant = IsConstant(*t);
  out->fingerprint = kernels::FingerprintHost(t->data.data(), t->data.size());
}

const char* SlotName(uint8_t slot) {
  switch (static_cast<TensorSlot>(slot)) {
    case TensorSlot::kA: return "A";
    case TensorSlot::kB: return "B";
    case TensorSlot::kConvX: return "x";
    case TensorSlot::kConvW: return "w";
    case TensorSlot::kConvY: return "dy";
    default: return "?";
  }
}

// Enough digits to tell two neighbouring doubles apart (values that differ by one ulp must not print alike).
std::string Exact(double v) { return std::isfinite(v) ? absl::StrFormat("%.17g", v) : FormatNumber(v); }

std::string RankList(const std::vector<int>& ranks) { return absl::StrJoin(ranks, ", "); }

// An operand established identical on `members` (indices into the group) at their pointers `ptrs`.
struct Entry {
  uint64_t signature = 0;
  uint8_t slot = 0;
  std::vector<size_t> members;
  std::vector<uint64_t> ptrs;
  size_t established_at = 0;  // op index in the group
  uint64_t uses = 1;
  bool parted = false;
};

// One parting, reported once: the first op, and how many more operands parted the same way.
struct Parting {
  std::string key;  // the replicas and how they split
  Finding finding;
  uint64_t more = 0;
  uint64_t last_seq = 0;
};

class GroupChecker {
 public:
  GroupChecker(const std::vector<const RankReplicaDigest*>& ranks, ReplicaSummary* summary, const TensorLoader& load)
      : ranks_(ranks), summary_(summary), load_(load) {}

  void Run(std::vector<Parting>* partings) {
    const size_t n_ops = ranks_[0]->ops.size();
    for (size_t i = 0; i < n_ops; ++i)
      for (size_t j = 0; j < ranks_[0]->ops[i].operands.size(); ++j)
        if (ranks_[0]->ops[i].operands[j].slot != 0xff) CheckOperand(i, j, partings);
  }

 private:
  const ReplicaOperand& Operand(size_t member, size_t i, size_t j) const {
    return ranks_[member]->ops[i].operands[j];
  }
  int RankOf(size_t member) const { return ranks_[member]->rank; }

  using Key = std::tuple<uint64_t, uint8_t, size_t, uint64_t>;  // signature, slot, first member, its pointer

  void CheckOperand(size_t i, size_t j, std::vector<Parting>* partings) {
    const ReplicaOp& op0 = ranks_[0]->ops[i];
    const uint8_t slot = op0.operands[j].slot;
    // Established operands read again here.
    std::set<std::vector<size_t>> still_identical;
    for (size_t m = 0; m < ranks_.size(); ++m) {
      auto it = index_.find(Key{op0.signature, slot, m, Operand(m, i, j).ptr});
      if (it == index_.end()) continue;
      for (size_t e : it->second) {
        Entry& entry = entries_[e];
        if (entry.parted) continue;
        bool same_operand = true, all_present = true;
        for (size_t k = 0; k < entry.members.size(); ++k) {
          const ReplicaOperand& o = Operand(entry.members[k], i, j);
          same_operand = same_operand && o.ptr == entry.ptrs[k];
          all_present = all_present && o.present;
        }
        if (!same_operand || !all_present) continue;
        ++entry.uses;
        ++summary_->uses_compared;
        std::map<uint64_t, std::vector<size_t>> classes;
        for (size_t member : entry.members) classes[Operand(member, i, j).fingerprint].push_back(member);
        if (classes.size() == 1) {
          still_identical.insert(entry.members);
          continue;
        }
        entry.parted = true;
        ++summary_->parted;
        Report(entry, classes, i, j, partings);
      }
    }
    // New replicas: classes of two or more ranks with the same non-constant operand.
    std::map<uint64_t, std::vector<size_t>> classes;
    for (size_t m = 0; m < ranks_.size(); ++m) {
      const ReplicaOperand& o = Operand(m, i, j);
      if (o.present && !o.constant) classes[o.fingerprint].push_back(m);
    }
    for (const auto& [fp, members] : classes) {
      if (members.size() < 2 || still_identical.count(members) > 0) continue;
      Entry entry;
      entry.signature = op0.signature;
      entry.slot = slot;
      entry.members = members;
      for (size_t m : members) entry.ptrs.push_back(Operand(m, i, j).ptr);
      entry.established_at = i;
      index_[Key{op0.signature, slot, members[0], entry.ptrs[0]}].push_back(entries_.size());
      entries_.push_back(std::move(entry));
      ++summary_->operands_established;
      std::vector<int> ranks;
      for (size_t m : members) ranks.push_back(RankOf(m));
      summary_->sets.insert(ranks);
    }
  }

  void Report(const Entry& entry, const std::map<uint64_t, std::vector<size_t>>& classes, size_t i, size_t j,
              std::vector<Parting>* partings) {
    // The majority: a class larger than every other one.
    const std::vector<size_t>* majority = nullptr;
    bool tie = false;
    for (const auto& [fp, members] : classes) {
      if (majority == nullptr || members.size() > majority->size()) {
        majority = &members;
        tie = false;
      } else if (members.size() == majority->size()) {
        tie = true;
      }
    }
    if (tie) majority = nullptr;
    std::vector<int> minority, agree;
    std::vector<std::string> class_text;
    std::vector<const std::vector<size_t>*> by_rank;  // the classes in order of their lowest rank
    for (const auto& [fp, members] : classes) by_rank.push_back(&members);
    std::sort(by_rank.begin(), by_rank.end(), [](const auto* a, const auto* b) { return a->front() < b->front(); });
    for (const std::vector<size_t>* cls : by_rank) {
      const std::vector<size_t>& members = *cls;
      std::vector<int> ranks;
      for (size_t m : members) ranks.push_back(RankOf(m));
      class_text.push_back(absl::StrCat("{", RankList(ranks), "}"));
      if (&members == majority) {
        agree = ranks;
      } else if (majority != nullptr) {
        minority.insert(minority.end(), ranks.begin(), ranks.end());
      }
    }
    std::sort(minority.begin(), minority.end());
    // Blamed: the first minority rank; without a majority, the first rank outside the lowest rank's class.
    size_t blamed = 0, reference = 0;
    if (majority != nullptr) {
      reference = majority->front();
      for (const auto& [fp, members] : classes)
        for (size_t m : members)
          if (RankOf(m) == minority.front()) blamed = m;
    } else {
      reference = entry.members.front();
      const uint64_t ref_fp = Operand(reference, i, j).fingerprint;
      for (size_t m : entry.members)
        if (Operand(m, i, j).fingerprint != ref_fp) {
          blamed = m;
          break;
        }
    }
    std::vector<int> replicas;
    for (size_t m : entry.members) replicas.push_back(RankOf(m));
    const std::string who =
        majority != nullptr
            ? absl::StrCat(minority.size() == 1 ? "rank " : "ranks ", RankList(minority), " differ",
                           minority.size() == 1 ? "s" : "", " from the majority (", RankList(agree), ")")
            : absl::StrCat("no majority: ", absl::StrJoin(class_text, " vs "));
    // Partings with the same replicas and the same split are one event.
    std::string split_key = absl::StrCat(RankList(replicas), "|", absl::StrJoin(class_text, ","));
    for (Parting& p : *partings) {
      if (p.key == split_key) {
        ++p.more;
        p.last_seq = ranks_[blamed]->ops[i].seq;
        return;
      }
    }
    const ReplicaOp& op = ranks_[blamed]->ops[i];
    const ReplicaOperand& got = Operand(blamed, i, j);
    const ReplicaOperand& expected = Operand(reference, i, j);
    Parting p;
    p.key = split_key;
    Finding& f = p.finding;
    f.check = "replica.identical";
    f.rank = RankOf(blamed);
    f.seq = op.seq;
    f.api = format::ApiName(op.api);
    f.model = GetErrorModel(ErrorModelId::kExact).name;
    f.threshold = 0;
    f.ratio = std::numeric_limits<double>::infinity();
    const uint64_t first_seq = ranks_[entry.members.front()]->ops[entry.established_at].seq;
    std::string evidence;
    // Payloads released after digesting (a streaming check) are read again for the evidence, then released.
    std::vector<Tensor*> reloaded;
    for (const auto& [member, operand] : {std::make_pair(blamed, &got), std::make_pair(reference, &expected)}) {
      Tensor* t = const_cast<Tensor*>(operand->tensor);
      if (t == nullptr || !t->data.empty() || t->payload_bytes == 0) continue;
      if (!load_ || !load_(ranks_[member]->path, {t}).ok()) {
        evidence = " (the differing elements could not be read again)";
        continue;
      }
      reloaded.push_back(t);
    }
    if (evidence.empty() && got.tensor != nullptr && expected.tensor != nullptr &&
        got.tensor->meta.dtype == expected.tensor->meta.dtype && !got.tensor->data.empty() &&
        got.tensor->data.size() == expected.tensor->data.size()) {
      const auto dtype = static_cast<format::DType>(got.tensor->meta.dtype);
      const uint32_t esize = format::DTypeSize(got.tensor->meta.dtype);
      const uint64_t n = got.tensor->data.size() / esize;
      const int64_t rows = std::max<int64_t>(got.tensor->meta.rows, 1);
      f.elements = n;
      for (uint64_t e = 0; e < n; ++e) {
        const char* a = got.tensor->data.data() + e * esize;
        const char* b = expected.tensor->data.data() + e * esize;
        if (memcmp(a, b, esize) == 0) continue;
        const double va = DecodeElement(dtype, got.tensor->data.data(), e);
        const double vb = DecodeElement(dtype, expected.tensor->data.data(), e);
        const double abs_err = std::fabs(va - vb);
        if (std::isfinite(abs_err)) {
          f.max_abs_err = std::max(f.max_abs_err, abs_err);
          if (vb != 0) f.max_rel_err = std::max(f.max_rel_err, abs_err / std::fabs(vb));
        }
        if (f.violations++ == 0) {
          f.has_element = true;
          const int64_t per_batch = rows * std::max<int64_t>(got.tensor->meta.cols, 1);
          f.first = {e, static_cast<int64_t>(e % per_batch) % rows, static_cast<int64_t>(e % per_batch) / rows,
                     static_cast<int64_t>(e / per_batch), va, vb, 0};
        }
      }
      evidence = absl::StrCat(": ", f.violations, " of ", n, " ", DTypeName(got.tensor->meta.dtype),
                              " elements differ from rank ", RankOf(reference), "'s, first at element ",
                              f.first.index, ": got ", Exact(f.first.got), ", expected ", Exact(f.first.expected),
                              ", max abs difference ", FormatNumber(f.max_abs_err));
    }
    for (Tensor* t : reloaded)
      if (t->deferred) std::string().swap(t->data);
    f.message = absl::StrCat("replicas part: operand ", SlotName(got.slot), " was bitwise identical on ranks ",
                             RankList(replicas), " when first read (rank ", RankOf(entry.members.front()), " seq ",
                             first_seq, "); at read ", entry.uses, " of it ", who, evidence);
    f.detail = absl::StrCat("replicas of this operand: ranks ", RankList(replicas),
                            " (the same op sequence, the same operand buffer at every read); compared bitwise");
    p.last_seq = op.seq;
    partings->push_back(std::move(p));
  }

  const std::vector<const RankReplicaDigest*>& ranks_;
  ReplicaSummary* summary_;
  const TensorLoader& load_;
  std::vector<Entry> entries_;
  std::map<Key, std::vector<size_t>> index_;
};

}  // namespace

bool DigestReplicaOp(const Op& op, ReplicaOp* out) {
  *out = ReplicaOp{};
  out->seq = op.seq;
  out->api = op.api;
  switch (op.kind) {
    case OpKind::kGemm: {
      format::GemmRecord r = op.gemm;
      r.seq = 0;
      r.status = 0;
      r.t_ns = r.handle = r.stream = r.a_ptr = r.b_ptr = r.c_ptr = 0;
      out->signature = HashRecord(r, 1);
      SetOperand(op, TensorSlot::kA, op.gemm.a_ptr, &out->operands[0]);
      SetOperand(op, TensorSlot::kB, op.gemm.b_ptr, &out->operands[1]);
      return true;
    }
    case OpKind::kLtMatmul: {
      format::LtMatmulRecord r = op.lt;
      r.seq = 0;
      r.status = 0;
      r.t_ns = r.handle = r.stream = r.a_ptr = r.b_ptr = r.c_ptr = r.d_ptr = 0;
      r.bias_ptr = r.aux_ptr = r.a_scale_ptr = r.b_scale_ptr = r.c_scale_ptr = r.d_scale_ptr = 0;
      r.amax_d_ptr = r.aux_scale_ptr = r.aux_amax_ptr = 0;
      out->signature = HashRecord(r, 2);
      SetOperand(op, TensorSlot::kA, op.lt.a_ptr, &out->operands[0]);
      SetOperand(op, TensorSlot::kB, op.lt.b_ptr, &out->operands[1]);
      return true;
    }
    case OpKind::kConv: {
      format::ConvRecord r = op.conv;
      r.seq = 0;
      r.status = 0;
      r.algo = 0;  // chosen per rank (autotuning); the arithmetic it names is the same convolution
      r.t_ns = r.handle = r.stream = r.x_ptr = r.w_ptr = r.y_ptr = 0;
      out->signature = HashRecord(r, 3);
      const format::ApiId api = static_cast<format::ApiId>(op.api);
      const bool bwd_data = api == format::ApiId::kCudnnConvolutionBackwardData;
      const bool bwd_filter = api == format::ApiId::kCudnnConvolutionBackwardFilter;
      if (!bwd_data) SetOperand(op, TensorSlot::kConvX, op.conv.x_ptr, &out->operands[0]);
      if (!bwd_filter) SetOperand(op, TensorSlot::kConvW, op.conv.w_ptr, &out->operands[1]);
      if (bwd_data || bwd_filter) SetOperand(op, TensorSlot::kConvY, op.conv.y_ptr, &out->operands[2]);
      return true;
    }
    default:
      return false;
  }
}

RankReplicaDigest DigestRank(const RankTrace& trace) {
  RankReplicaDigest d;
  d.rank = trace.rank();
  d.path = trace.path;
  for (const Op& op : trace.ops) {
    ReplicaOp r;
    if (DigestReplicaOp(op, &r)) d.ops.push_back(r);
  }
  return d;
}

void CheckReplicaDigests(const std::vector<RankReplicaDigest>& ranks, CheckReport* report, const TensorLoader& load) {
  ReplicaSummary& summary = report->summary().replicas;
  summary.ran = true;
  // Candidate groups: ranks with equal signature sequences.
  std::map<std::vector<uint64_t>, std::vector<const RankReplicaDigest*>> groups;
  for (const RankReplicaDigest& r : ranks) {
    if (r.ops.empty()) continue;
    std::vector<uint64_t> sigs;
    sigs.reserve(r.ops.size());
    for (const ReplicaOp& op : r.ops) sigs.push_back(op.signature);
    groups[std::move(sigs)].push_back(&r);
  }
  std::vector<Parting> partings;
  for (auto& [sigs, members] : groups) {
    if (members.size() < 2) continue;
    ++summary.groups;
    GroupChecker(members, &summary, load).Run(&partings);
  }
  for (Parting& p : partings) {
    Finding& f = p.finding;
    if (p.more > 0)
      absl::StrAppend(&f.message, "; ", p.more, " more operand", p.more == 1 ? "" : "s",
                      " parted the same way, the last at seq ", p.last_seq);
    report->AddFinding(std::move(f));
  }
}

void CheckReplicas(const TraceSet& set, CheckReport* report) {
  std::vector<RankReplicaDigest> digests;
  digests.reserve(set.ranks.size());
  for (const RankTrace& t : set.ranks) digests.push_back(DigestRank(t));
  CheckReplicaDigests(digests, report);
}

}  // namespace ttrace::analyzer
