// The merge simulates the chain as one process, so it needs nothing but the point-to-point ops' peers: no stage
// count, schedule or micro-batch count. A trace whose sends and receives do not pair up (a rank missing, a capture
// filter) cannot deadlock it: when no rank of the chain can run, the lowest blocked one is let through.
#include "analyzer/pipeline.h"

#include "analyzer/dataflow.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

namespace ttrace::analyzer {

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

bool IsSend(const Op& op) {
  return op.kind == OpKind::kCollective && op.api == static_cast<uint16_t>(format::ApiId::kNcclSend);
}
bool IsRecv(const Op& op) {
  return op.kind == OpKind::kCollective && op.api == static_cast<uint16_t>(format::ApiId::kNcclRecv);
}

// Rank index of each (communicator, comm rank), and the communicators whose sends and receives are exchanges,
// not pipeline hand-overs: an all-to-all issued as grouped sends and receives (PyTorch's all_to_all_single on
// NCCL, an expert-parallel token dispatch) has a rank send to or receive from itself, or talk to three or more
// other ranks, neither of which a pipeline stage does (it talks to the stage before and the stage after, also in
// an interleaved schedule's ring). Without either (two or three ranks, the self chunk copied or skipped), what
// tells them apart is the first transfer: an exchange starts on every rank with one group that sends to and
// receives from the same peer, while a pipeline starts one way on some rank (the last stage first waits for an
// activation, with nothing to send; it has no gradient to return before it ran its layers, and a schedule that
// later pairs a send with a receive from the same stage in one group, 1F1B's send-forward-receive-backward, does
// so only after that). A group is a run of consecutive ops issued inside ncclGroupStart/End on the rank (two
// groups back to back read as one, which can only make a pipeline stage's first group two-way on a stage that
// sends first; the last stage's stays one way). Such ops join no chain.
class Peers {
 public:
  explicit Peers(const TraceSet& set) {
    std::map<std::pair<uint64_t, int32_t>, std::set<int32_t>> talks_to;  // (comm, comm rank) -> other comm ranks
    std::map<uint64_t, bool> starts_two_way;  // comm -> every rank's first group sends to and receives from a peer
    for (size_t r = 0; r < set.ranks.size(); ++r) {
      // comm -> the peers sent to and received from in the rank's first group on it; done once the group ended
      std::map<uint64_t, std::pair<std::set<int32_t>, std::set<int32_t>>> first;
      std::set<uint64_t> done;
      for (const Op& op : set.ranks[r].ops) {
        const bool grouped = op.kind == OpKind::kCollective && op.coll.in_group != 0;
        if (!grouped)  // the groups begun before end here
          for (const auto& [comm, sets] : first) done.insert(comm);
        if (op.kind != OpKind::kCollective) continue;
        index_[{op.coll.comm_hash, op.coll.comm_rank}] = r;
        if (!IsSend(op) && !IsRecv(op)) continue;
        if (op.coll.root_or_peer == op.coll.comm_rank) exchange_.insert(op.coll.comm_hash);
        else talks_to[{op.coll.comm_hash, op.coll.comm_rank}].insert(op.coll.root_or_peer);
        if (done.count(op.coll.comm_hash) > 0) continue;
        auto& [to, from] = first[op.coll.comm_hash];
        (IsSend(op) ? to : from).insert(op.coll.root_or_peer);
        if (!grouped) done.insert(op.coll.comm_hash);  // a transfer outside a group is a group of its own
      }
      for (const auto& [comm, sets] : first) {
        bool two_way = false;
        for (int32_t peer : sets.first) two_way = two_way || sets.second.count(peer) > 0;
        auto it = starts_two_way.emplace(comm, true).first;
        it->second = it->second && two_way;
      }
    }
    for (const auto& [key, peers] : talks_to)
      if (peers.size() >= 3) exchange_.insert(key.first);
    for (const auto& [comm, two_way] : starts_two_way)
      if (two_way) exchange_.insert(comm);
  }
  // The rank index at the other end of a pipeline send or receive, kNone when unknown, not point-to-point or on an
  // exchange communicator.
  size_t Of(const Op& op) const {
    if ((!IsSend(op) && !IsRecv(op)) || exchange_.count(op.coll.comm_hash) > 0) return kNone;
    auto it = index_.find({op.coll.comm_hash, op.coll.root_or_peer});
    return it == index_.end() ? kNone : it->second;
  }

 private:
  std::map<std::pair<uint64_t, int32_t>, size_t> index_;
  std::set<uint64_t> exchange_;
};

size_t Root(std::vector<size_t>& parent, size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

PipelineLayout InferPipeline(const TraceSet& cand) {
  const size_t n = cand.ranks.size();
  const Peers peers(cand);
  std::vector<size_t> parent(n), pred(n, kNone);
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t r = 0; r < n; ++r) {
    bool first = true;
    for (const Op& op : cand.ranks[r].ops) {
      const size_t q = peers.Of(op);
      if (q == kNone || q == r) continue;
      parent[Root(parent, r)] = Root(parent, q);
      if (first && IsRecv(op)) pred[r] = q;
      first = false;
    }
  }
  PipelineLayout out;
  out.stage.assign(n, 0);
  for (size_t r = 0; r < n; ++r)
    for (size_t p = pred[r], hops = 1; p != kNone && hops <= n; p = pred[p], ++hops)
      out.stage[r] = static_cast<int>(hops);
  std::map<size_t, std::vector<size_t>> groups;
  for (size_t r = 0; r < n; ++r) groups[Root(parent, r)].push_back(r);
  for (auto& [root, members] : groups) {
    std::stable_sort(members.begin(), members.end(),
                     [&](size_t a, size_t b) { return out.stage[a] < out.stage[b]; });
    out.stages = std::max(out.stages, static_cast<int>(members.size()));
    out.chains.push_back(members);
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> MergeChain(const TraceSet& cand, const std::vector<size_t>& chain) {
  const Peers peers(cand);
  std::map<size_t, size_t> pos;
  size_t total = 0;
  for (size_t r : chain) {
    pos[r] = 0;
    total += cand.ranks[r].ops.size();
  }
  // Messages sent and not yet received, per (communicator, sender, receiver).
  std::map<std::tuple<uint64_t, size_t, size_t>, int64_t> in_flight;
  auto key = [&](size_t from, size_t to, const Op& op) { return std::make_tuple(op.coll.comm_hash, from, to); };
  auto runnable = [&](size_t r) {
    const std::vector<Op>& ops = cand.ranks[r].ops;
    if (pos[r] >= ops.size()) return false;
    const Op& op = ops[pos[r]];
    const size_t q = peers.Of(op);
    return !IsRecv(op) || q == kNone || pos.count(q) == 0 || in_flight[key(q, r, op)] > 0;
  };
  std::vector<std::pair<size_t, size_t>> out;
  out.reserve(total);
  std::vector<size_t> handed_over;  // ranks that sent and were left for their receiver, most recent last
  size_t cur = chain.front();
  while (out.size() < total) {
    if (!runnable(cur)) {
      cur = kNone;
      while (!handed_over.empty() && cur == kNone) {
        const size_t r = handed_over.back();
        handed_over.pop_back();
        if (runnable(r)) cur = r;
      }
      for (size_t i = 0; i < chain.size() && cur == kNone; ++i)
        if (runnable(chain[i])) cur = chain[i];
      for (size_t i = 0; i < chain.size() && cur == kNone; ++i)  // sends and receives do not pair up: let one through
        if (pos[chain[i]] < cand.ranks[chain[i]].ops.size()) cur = chain[i];
    }
    const Op& op = cand.ranks[cur].ops[pos[cur]];
    const size_t q = peers.Of(op);
    out.emplace_back(cur, pos[cur]++);
    if (q == kNone || pos.count(q) == 0) continue;
    if (IsRecv(op)) {
      --in_flight[key(q, cur, op)];
    } else {
      ++in_flight[key(cur, q, op)];
      handed_over.erase(std::remove(handed_over.begin(), handed_over.end(), q), handed_over.end());
      handed_over.push_back(cur);
      cur = q;
    }
  }
  return out;
}

std::vector<RankAlignment> AlignPipelined(const std::vector<Op>& ref, const TraceSet& cand,
                                          const PipelineLayout& layout, int64_t max_gap, const OwnedRanges* owned) {
  std::vector<RankAlignment> out(cand.ranks.size());
  std::vector<const Op*> ref_ops;
  for (const Op& op : ref) ref_ops.push_back(&op);
  std::vector<size_t> ref_unit;  // the reference's data-flow units, computed for the first chain
  auto owns = [&](size_t r) -> const std::vector<std::pair<uint64_t, uint64_t>>* {
    if (owned == nullptr) return nullptr;
    auto it = owned->find(cand.ranks[r].rank());
    return it == owned->end() ? nullptr : &it->second;
  };
  for (size_t r = 0; r < cand.ranks.size(); ++r) {
    const std::vector<std::pair<uint64_t, uint64_t>>* ranges = owns(r);
    if (ranges == nullptr) continue;
    std::vector<const Op*> mine, sub;
    std::vector<size_t> at;  // index into ref of each op of sub
    for (const Op& op : cand.ranks[r].ops) mine.push_back(&op);
    for (size_t i = 0; i < ref.size(); ++i)
      for (const auto& [lo, hi] : *ranges)
        if (ref[i].seq >= lo && ref[i].seq <= hi) {
          sub.push_back(&ref[i]);
          at.push_back(i);
          break;
        }
    const RankAlignment a = AlignOps(sub, mine, max_gap);
    out[r].ref_of_cand.assign(mine.size(), -1);
    out[r].cand_of_ref.assign(ref.size(), -1);
    out[r].reordered = a.reordered;
    for (size_t j = 0; j < mine.size(); ++j)
      if (a.ref_of_cand[j] >= 0) {
        const size_t i = at[static_cast<size_t>(a.ref_of_cand[j])];
        out[r].ref_of_cand[j] = static_cast<int64_t>(i);
        out[r].cand_of_ref[i] = static_cast<int64_t>(j);
      }
  }
  for (std::vector<size_t> chain : layout.chains) {
    chain.erase(std::remove_if(chain.begin(), chain.end(), [&](size_t r) { return owns(r) != nullptr; }),
                chain.end());
    if (chain.empty()) continue;
    if (chain.size() == 1) {
      out[chain[0]] = AlignOps(ref, cand.ranks[chain[0]].ops, max_gap);
      continue;
    }
    const std::vector<std::pair<size_t, size_t>> merged = MergeChain(cand, chain);
    std::vector<const Op*> ops;
    for (const auto& [r, j] : merged) ops.push_back(&cand.ranks[r].ops[j]);
    // Each rank's data-flow units (dataflow.h), at their merged positions.
    std::map<size_t, std::vector<size_t>> at;  // per rank: the merged position of each of its ops
    for (size_t x = 0; x < merged.size(); ++x) {
      std::vector<size_t>& v = at[merged[x].first];
      v.resize(std::max(v.size(), merged[x].second + 1));
      v[merged[x].second] = x;
    }
    std::vector<size_t> cand_unit(merged.size());
    for (size_t r : chain) {
      std::vector<const Op*> mine;
      for (const Op& op : cand.ranks[r].ops) mine.push_back(&op);
      const std::vector<size_t> u = DataFlowUnits(mine);
      for (size_t j = 0; j < u.size(); ++j) cand_unit[at[r][j]] = at[r][u[j]];
    }
    if (ref_unit.empty()) ref_unit = DataFlowUnits(ref_ops);
    const RankAlignment a = AlignByUnits(ref_ops, ref_unit, ops, cand_unit, max_gap);
    for (size_t r : chain) {
      out[r].ref_of_cand.assign(cand.ranks[r].ops.size(), -1);
      out[r].cand_of_ref.assign(ref.size(), -1);
    }
    for (size_t x = 0; x < merged.size(); ++x) {
      const auto [r, j] = merged[x];
      const int64_t i = a.ref_of_cand[x];
      out[r].ref_of_cand[j] = i;
      if (i >= 0) out[r].cand_of_ref[static_cast<size_t>(i)] = static_cast<int64_t>(j);
    }
    out[chain[0]].reordered += a.reordered;
  }
  return out;
}

}  // namespace ttrace::analyzer
