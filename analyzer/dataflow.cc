// Units are a union-find over ops keyed by a hash of each captured operand's bytes (with its length); equal hashes
// are taken as equal bytes (64-bit hash: a false join needs a collision among one rank's operands).
#include "analyzer/dataflow.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace ttrace::analyzer {

namespace {

using format::TensorSlot;

constexpr TensorSlot kLinkSlots[] = {TensorSlot::kA, TensorSlot::kB, TensorSlot::kCOut, TensorSlot::kSend,
                                     TensorSlot::kRecv};
// More holders than this: a tensor every pass reads (and not worth the pairwise signature test).
constexpr size_t kMaxHolders = 64;

// Bytes that repeat with a period of 8 (a constant of any element size up to 8: zeros, ones) carry no identity.
bool Constant(const std::string& d) { return d.size() < 16 || memcmp(d.data(), d.data() + 8, d.size() - 8) == 0; }

size_t Root(std::vector<size_t>& parent, size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

std::vector<size_t> DataFlowUnits(const std::vector<const Op*>& ops) {
  const size_t n = ops.size();
  std::unordered_map<uint64_t, std::vector<size_t>> holders;
  for (size_t i = 0; i < n; ++i)
    for (const TensorSlot slot : kLinkSlots) {
      const Tensor* t = ops[i]->tensor(slot);
      if (t == nullptr || Constant(t->data)) continue;
      const uint64_t h = std::hash<std::string_view>()(t->data) * 1000003u + t->data.size();
      std::vector<size_t>& v = holders[h];
      if (v.empty() || v.back() != i) v.push_back(i);  // an in-place collective holds its bytes in send and recv
    }
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (const auto& [h, v] : holders) {
    if (v.size() < 2 || v.size() > kMaxHolders) continue;
    bool weight = false;  // read by the same op in two passes
    for (size_t a = 0; a < v.size() && !weight; ++a)
      for (size_t b = a + 1; b < v.size() && !weight; ++b) weight = SameSignature(*ops[v[a]], *ops[v[b]]);
    if (weight) continue;
    for (size_t a = 1; a < v.size(); ++a) {
      const size_t x = Root(parent, v[0]), y = Root(parent, v[a]);
      parent[std::max(x, y)] = std::min(x, y);  // the root is the unit's first op
    }
  }
  std::vector<size_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = Root(parent, i);
  return out;
}

namespace {

// Per op: its unit's key op (the first GEMM among the unit's ops, else the unit's first op); and each unit's ops.
struct Units {
  std::vector<size_t> key;
  std::unordered_map<size_t, std::vector<size_t>> members;  // by first op
};

Units Index(const std::vector<const Op*>& ops, const std::vector<size_t>& unit) {
  Units u;
  for (size_t i = 0; i < ops.size(); ++i) u.members[unit[i]].push_back(i);
  std::unordered_map<size_t, size_t> key;
  for (const auto& [first, m] : u.members) {
    key[first] = first;
    for (size_t i : m)
      if (ops[i]->kind == OpKind::kGemm) {
        key[first] = i;
        break;
      }
  }
  u.key.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) u.key[i] = key[unit[i]];
  return u;
}

std::vector<const Op*> Pick(const std::vector<const Op*>& ops, const std::vector<size_t>& at) {
  std::vector<const Op*> out;
  out.reserve(at.size());
  for (size_t i : at) out.push_back(ops[i]);
  return out;
}

}  // namespace

RankAlignment AlignByUnits(const std::vector<const Op*>& ref, const std::vector<size_t>& ref_unit,
                           const std::vector<const Op*>& cand, const std::vector<size_t>& cand_unit,
                           int64_t max_gap) {
  const Units ru = Index(ref, ref_unit), cu = Index(cand, cand_unit);
  std::vector<size_t> ref_spine, cand_spine;
  for (size_t i = 0; i < ref.size(); ++i)
    if (ru.key[i] == i) ref_spine.push_back(i);
  for (size_t j = 0; j < cand.size(); ++j)
    if (cu.key[j] == j) cand_spine.push_back(j);
  const RankAlignment spine = AlignOps(Pick(ref, ref_spine), Pick(cand, cand_spine), max_gap);

  RankAlignment out;
  out.ref_of_cand.assign(cand.size(), -1);
  out.cand_of_ref.assign(ref.size(), -1);
  auto pair = [&](size_t i, size_t j) {
    if (out.cand_of_ref[i] >= 0 || out.ref_of_cand[j] >= 0) return;
    out.cand_of_ref[i] = static_cast<int64_t>(j);
    out.ref_of_cand[j] = static_cast<int64_t>(i);
  };
  for (size_t x = 0; x < cand_spine.size(); ++x) {
    if (spine.ref_of_cand[x] < 0) continue;
    const size_t i = ref_spine[static_cast<size_t>(spine.ref_of_cand[x])], j = cand_spine[x];
    const std::vector<size_t>& mr = ru.members.at(ref_unit[i]);
    const std::vector<size_t>& mc = cu.members.at(cand_unit[j]);
    if (mr.size() == 1 && mc.size() == 1) {
      pair(i, j);
      continue;
    }
    const RankAlignment a = AlignOps(Pick(ref, mr), Pick(cand, mc), max_gap);
    for (size_t q = 0; q < mc.size(); ++q)
      if (a.ref_of_cand[q] >= 0) pair(mr[static_cast<size_t>(a.ref_of_cand[q])], mc[q]);
  }
  out.reordered = spine.reordered;
  const int64_t n = static_cast<int64_t>(ref.size()), m = static_cast<int64_t>(cand.size());
  for (int64_t j = 0; j < m; ++j) {
    if (out.ref_of_cand[j] >= 0) continue;
    int64_t best = -1;
    for (int64_t i = std::max<int64_t>(0, j - max_gap); i < std::min(n, j + max_gap + 1); ++i)
      if (out.cand_of_ref[i] < 0 && Compatible(*ref[i], *cand[j]) &&
          (best < 0 || std::llabs(i - j) < std::llabs(best - j)))
        best = i;
    if (best >= 0) {
      pair(static_cast<size_t>(best), static_cast<size_t>(j));
      ++out.reordered;
    }
  }
  return out;
}

}  // namespace ttrace::analyzer
