// GEMMs are checked rank by rank (each needs only its own operands); collectives after all ranks are loaded,
// since every member's inputs are needed for each one. What a stream says about its own completeness (its
// EndRecord and where it stops) is turned into gaps here, so that the verdict never calls lost evidence clean.
#include "analyzer/check.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzer/status_macros.h"
#include "analyzer/blas.h"
#include "analyzer/collective_check.h"
#include "analyzer/conv_check.h"
#include "analyzer/graph_check.h"
#include "analyzer/lt_check.h"
#include "analyzer/replica_check.h"

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
    if (t != nullptr) bytes += t->deferred ? t->payload_bytes : t->data.size();
  for (const auto* side : {&op.graph_in, &op.graph_out})
    for (const auto& [number, t] : *side)
      if (t != nullptr) bytes += t->deferred ? t->payload_bytes : t->data.size();
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
  for (const auto& [reason, ops] : p.not_checked_ops)
    for (const OpName& op : ops) into->NameNotChecked(reason, op);
  into->timeline().Merge(part.timeline());
  for (const auto& [method, g] : p.gemm_methods) {
    GemmMethodSummary& m = s.gemm_methods[method];
    m.replayed = m.ops == 0 ? g.replayed : std::min(m.replayed, g.replayed);
    m.ops += g.ops;
    m.vdpbf16ps_ops += g.vdpbf16ps_ops;
    m.guaranteed = std::max(m.guaranteed, g.guaranteed);
    m.screened = std::max(m.screened, g.screened);
  }
  if (!p.gemm_model.empty()) s.gemm_model = p.gemm_model;
  for (const std::string& w : p.warnings) into->Warn(w);
  s.warnings_suppressed += p.warnings_suppressed;
  for (const std::string& g : p.gaps) into->AddGap(g);
  for (const Finding& f : part.findings()) into->AddFinding(f);
}

// Names the ops of a collective unit its check did not check: those of `unit` without a point in the part's
// timeline, under the part's reason (the first, when the unit gave several).
void NameUnitNotChecked(const std::vector<const Op*>& unit, const std::map<const Op*, const RankTrace*>& owner,
                        CheckReport* part) {
  const auto& reasons = part->summary().not_checked;
  if (reasons.empty()) return;
  for (const Op* op : unit) {
    const int rank = owner.at(op)->rank();
    auto r = part->timeline().ranks().find(rank);
    if (r != part->timeline().ranks().end() && r->second.buckets.count(op->seq >> r->second.shift) > 0) continue;
    part->NameNotChecked(reasons.begin()->first, OpName{rank, op->seq, op->api_name()});
  }
}

// Every tensor of `op` (slots and graph tensors). The Tensor objects are owned through unique_ptr, so a const Op
// still gives them to the loader, which fills and frees deferred payloads.
std::vector<Tensor*> TensorsOf(const Op& op) {
  std::vector<Tensor*> out;
  for (const auto& t : op.tensors)
    if (t != nullptr) out.push_back(t.get());
  for (const auto* side : {&op.graph_in, &op.graph_out})
    for (const auto& [number, t] : *side)
      if (t != nullptr) out.push_back(t.get());
  return out;
}

// What checking `op` holds in memory, estimated: its payloads, plus 16 bytes per element for their FP64 values and
// the absolute values the bounds need (the replay's blocks are bounded separately, gemm_check.cc), plus what a
// cuDNN graph's evaluation holds (graph_check.h: one slice of a composite attention's intermediates, conv.fused's).
uint64_t OpCost(const Op& op) {
  uint64_t cost = GraphWorkingSet(op);
  for (const Tensor* t : TensorsOf(op)) {
    const uint32_t size = std::max<uint32_t>(1, format::DTypeSize(t->meta.dtype));
    const uint64_t bytes = t->deferred ? t->payload_bytes : t->data.size();
    cost += bytes + 16 * (bytes / size);
  }
  return cost;
}

// Frees the payloads LoadDeferred filled (tensors loaded with the trace stay).
void Release(const Op& op) {
  for (Tensor* t : TensorsOf(op))
    if (t->deferred) std::string().swap(t->data);
}

// One op to check, in merge order, and whether it is over the memory limit (then it is not checked); for the
// collectives' pool, one unit of the CollectivePlan instead (op null).
struct Item {
  int rank;
  const Op* op;
  uint64_t bytes;
  bool over_limit;
  size_t unit = 0;
};

// Checks items on `threads` workers; the calling thread merges the reports in submission order. With one thread
// the check runs inside Submit.
class OrderedPool {
 public:
  using Check = std::function<void(const Item&, CheckReport*)>;
  using Merged = std::function<void(const Item&, const CheckReport&)>;

  OrderedPool(int threads, Check check, Merged merged)
      : check_(std::move(check)), merged_(std::move(merged)), threads_(threads) {
    for (int t = 0; t < (threads_ > 1 ? threads_ : 0); ++t) workers_.emplace_back([this] { Work(); });
  }
  ~OrderedPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  void Submit(const Item& item) {
    if (threads_ <= 1) {
      CheckReport part;
      check_(item, &part);
      merged_(item, part);
      ++submitted_, ++merged_count_;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(item);
      slots_.emplace_back();
      ++submitted_;
    }
    cv_.notify_all();
  }

  // Merges, in order, until `count` items are merged. Rethrows std::bad_alloc from a worker.
  void MergeUntil(uint64_t count) {
    while (merged_count_ < std::min(count, submitted_)) {
      std::unique_ptr<CheckReport> part;
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        const size_t i = merged_count_ - base_;
        cv_.wait(lock, [&] { return slots_[i] != nullptr || out_of_memory_; });
        if (out_of_memory_) throw std::bad_alloc();
        part = std::move(slots_[i]);
        item = items_[i];
      }
      merged_(item, *part);
      part.reset();
      std::lock_guard<std::mutex> lock(mu_);
      ++merged_count_;
      // Drop the merged prefix now and then (the queues hold only what is in flight).
      if (merged_count_ - base_ > 1024 && merged_count_ - base_ == slots_.size()) {
        items_.clear(), slots_.clear();
        base_ = merged_count_;
        next_ = std::max(next_, base_);
      }
    }
  }
  uint64_t submitted() const { return submitted_; }

 private:
  void Work() {
    for (;;) {
      size_t i;
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return closing_ || next_ < base_ + items_.size(); });
        if (next_ >= base_ + items_.size()) return;
        i = next_++ - base_;
        item = items_[i];
      }
      auto part = std::make_unique<CheckReport>();
      bool oom = false;
      try {
        check_(item, part.get());
      } catch (const std::bad_alloc&) {
        oom = true;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (oom) {
          out_of_memory_ = true;
        } else {
          slots_[i] = std::move(part);
        }
      }
      cv_.notify_all();
    }
  }

  Check check_;
  Merged merged_;
  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  // items_[x] and slots_[x] are item base_ + x; next_ is the next item a worker takes.
  std::vector<Item> items_;
  std::vector<std::unique_ptr<CheckReport>> slots_;
  uint64_t base_ = 0, next_ = 0, submitted_ = 0, merged_count_ = 0;
  bool closing_ = false, out_of_memory_ = false;
};

// Each rank's replica digests (replica_check.h), taken op by op while the op's payloads are loaded.
struct ReplicaDigests {
  explicit ReplicaDigests(const TraceSet& set) {
    for (const RankTrace& t : set.ranks) {
      if (t.rank() < 0 || index.count(t.rank()) > 0) continue;  // a stream without a rank takes no part
      index[t.rank()] = digests.size();
      digests.emplace_back();
      digests.back().rank = t.rank();
      digests.back().path = t.path;
    }
  }
  std::map<int, size_t> index;
  std::vector<RankReplicaDigest> digests;
};

void DigestForReplicas(int rank, const Op& op, ReplicaDigests* d) {
  ReplicaOp r;
  auto it = d->index.find(rank);
  if (it != d->index.end() && DigestReplicaOp(op, &r)) d->digests[it->second].ops.push_back(r);
}

CheckReport RunChecksOnly(const TraceSet& set, const CheckProgress& progress, const CheckOptions& options);

}  // namespace

const Op* FindOp(const TraceSet& set, int rank, uint64_t seq) {
  for (const RankTrace& t : set.ranks) {
    if (t.rank() != rank) continue;
    auto op = std::lower_bound(t.ops.begin(), t.ops.end(), seq, [](const Op& o, uint64_t s) { return o.seq < s; });
    if (op != t.ops.end() && op->seq == seq) return &*op;
  }
  return nullptr;
}

void AttachContexts(const TraceSet& set, CheckReport* report) {
  for (Finding& f : *report->mutable_findings())
    if (const Op* op = FindOp(set, f.rank, f.seq)) f.context = op->context;
}

CheckReport RunChecks(const TraceSet& set, const CheckProgress& progress, const CheckOptions& options) {
  CheckReport report = RunChecksOnly(set, progress, options);
  AttachContexts(set, &report);
  return report;
}

namespace {

CheckReport RunChecksOnly(const TraceSet& set, const CheckProgress& progress, const CheckOptions& options) {
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
  }
  GemmCheckOptions gemm = options.gemm;
  gemm.max_work = options.max_gemm_work;
  uint64_t kept = 0;  // payloads the load kept (LoadOptions::keep_tensor_bytes): held until their op is checked
  for (const RankTrace& t : set.ranks)
    for (const Op& op : t.ops)
      for (const Tensor* x : TensorsOf(op))
        if (x->deferred) kept += x->data.size();
  const uint64_t limit = options.memory_limit > 0 ? options.memory_limit : UINT64_MAX;
  // Bytes the batches of payloads read during the check may hold at once (two at a time, each at most half).
  const uint64_t batch_limit = limit == UINT64_MAX ? limit : limit - std::min(limit, kept);
  CheckCounts counts;
  counts.ops_total = s.ops;
  uint64_t checkable = 0;
  for (const RankTrace& t : set.ranks)
    for (const Op& op : t.ops) {
      counts.bytes_total += OpBytes(op);
      checkable += op.kind != OpKind::kCollective;
    }
  const uint64_t requested_threads = options.threads > 0 ? static_cast<uint64_t>(options.threads)
                                                         : std::max(1u, std::thread::hardware_concurrency());
  const int threads = static_cast<int>(std::min<uint64_t>(requested_threads, std::max<uint64_t>(1, checkable)));
  auto over_limit = [&](const Item& item, CheckReport* part) {
    part->Warn(absl::StrCat("rank ", item.rank, " seq ", item.op->seq, " ", item.op->api_name(), ": checking it needs about ",
                            FormatCount(OpCost(*item.op) >> 20), " MiB, over the memory limit of ",
                            FormatCount(limit >> 20), " MiB (--memory-limit): not checked"));
    part->AddNotChecked("over the memory limit");
  };
  ReplicaDigests replicas(set);
  absl::Status load_error;
  {
    // BLAS's own threads would compete with the workers: one each while they run (blas.h: set before any call).
    const int blas_before = threads > 1 ? SetBlasThreads(1) : 0;
    OrderedPool pool(
        threads,
        [&](const Item& item, CheckReport* part) {
          if (item.over_limit) return over_limit(item, part);
          CheckOneOp(item.rank, *item.op, options, gemm, part);
        },
        [&](const Item& item, const CheckReport& part) {
          MergeOpReport(part, &report);
          for (const auto& [reason, n] : part.summary().not_checked)
            report.NameNotChecked(reason, OpName{item.rank, item.op->seq, item.op->api_name()});
          DigestForReplicas(item.rank, *item.op, &replicas);
          Release(*item.op);
          ++counts.ops_done;
          counts.bytes_done += item.bytes;
          if (progress) progress(counts);
        });
    // Rank by rank, in seq order, in batches of at most half the limit the kept payloads leave: a batch's payloads
    // are read (one forward pass over the stream) while the workers check the batch before it, so at most two
    // batches are held.
    uint64_t previous_end = 0;  // items submitted before the last batch
    for (const RankTrace& t : set.ranks) {
      DeferredTensorReader reader(t.path, true);
      std::vector<Item> batch;
      uint64_t batch_cost = 0;
      auto flush = [&]() -> absl::Status {
        // The batch before last is released first (a batch over half the limit waits for every one).
        pool.MergeUntil(batch_cost > batch_limit / 2 ? pool.submitted() : previous_end);
        std::vector<Tensor*> wanted;
        for (const Item& item : batch)
          if (!item.over_limit)
            for (Tensor* x : TensorsOf(*item.op))
              if (x->deferred && x->data.empty() && x->payload_bytes > 0) wanted.push_back(x);
        TTRACE_RETURN_IF_ERROR(reader.Load(std::move(wanted)));
        previous_end = pool.submitted();
        for (const Item& item : batch) pool.Submit(item);
        batch.clear();
        batch_cost = 0;
        return absl::OkStatus();
      };
      for (const Op& op : t.ops) {
        if (op.kind == OpKind::kCollective) continue;
        const uint64_t cost = OpCost(op);
        if (!batch.empty() && batch_cost + cost > batch_limit / 2) {
          load_error = flush();
          if (!load_error.ok()) break;
        }
        batch.push_back(Item{t.rank(), &op, OpBytes(op), cost > limit});
        batch_cost += cost > limit ? 0 : cost;
      }
      if (load_error.ok() && !batch.empty()) load_error = flush();
      if (!load_error.ok()) break;
    }
    if (load_error.ok()) pool.MergeUntil(pool.submitted());
    if (threads > 1) SetBlasThreads(blas_before);
  }
  if (!load_error.ok()) {
    report.AddGap(absl::StrCat("reading tensors failed: ", load_error.message()));
    report.Finish();
    return report;
  }
  // Collectives unit by unit (a group's members or a point-to-point pair), in batches of at most the limit, their
  // members' payloads read from every rank's stream before the batch is checked.
  const CollectivePlan plan(set);
  std::map<std::string, std::unique_ptr<DeferredTensorReader>> readers;
  std::map<const Op*, const RankTrace*> owner;
  for (const RankTrace& t : set.ranks)
    for (const Op& op : t.ops)
      if (op.kind == OpKind::kCollective) owner[&op] = &t;
  // Units are checked on the worker threads, a batch at a time, and merged in plan order on this one: the report is
  // the same at any thread count.
  absl::Status unit_error;
  {
    OrderedPool pool(
        static_cast<int>(std::min<uint64_t>(requested_threads, std::max<size_t>(1, plan.size()))),
        [&](const Item& item, CheckReport* part) {
          if (item.over_limit) {
            for (const Op* op : plan.ops(item.unit)) over_limit(Item{owner.at(op)->rank(), op, 0, true}, part);
          } else {
            plan.Check(item.unit, part);
          }
          NameUnitNotChecked(plan.ops(item.unit), owner, part);
        },
        [&](const Item& item, const CheckReport& part) {
          MergeOpReport(part, &report);
          for (const Op* op : plan.ops(item.unit)) {
            Release(*op);
            ++counts.ops_done;
            counts.bytes_done += OpBytes(*op);
          }
          if (progress) progress(counts);
        });
    size_t u = 0;
    while (u < plan.size() && unit_error.ok()) {
      size_t end = u;
      uint64_t cost = 0;
      std::map<const RankTrace*, std::vector<Tensor*>> wanted;
      std::vector<bool> over;
      while (end < plan.size()) {
        uint64_t c = 0;
        for (const Op* op : plan.ops(end)) c += OpCost(*op);
        if (end > u && cost + c > limit) break;
        over.push_back(c > limit);
        if (c <= limit) {
          cost += c;
          for (const Op* op : plan.ops(end))
            for (Tensor* x : TensorsOf(*op))
              if (x->deferred && x->data.empty() && x->payload_bytes > 0) wanted[owner.at(op)].push_back(x);
        }
        ++end;
      }
      for (auto& [t, tensors] : wanted) {
        auto& reader = readers[t->path];
        if (reader == nullptr) reader = std::make_unique<DeferredTensorReader>(t->path, true);
        unit_error = reader->Load(std::move(tensors));
        if (!unit_error.ok()) break;
      }
      if (!unit_error.ok()) break;
      for (size_t x = u; x < end; ++x) pool.Submit(Item{-1, nullptr, 0, over[x - u], x});
      pool.MergeUntil(pool.submitted());  // the batch's payloads are released before the next is read
      u = end;
    }
  }
  if (!unit_error.ok()) {
    report.AddGap(absl::StrCat("reading tensors failed: ", unit_error.message()));
    report.Finish();
    return report;
  }
  // Replicas: compared on the digests taken above; the payloads of a parting are read again for its evidence.
  std::map<std::string, std::unique_ptr<DeferredTensorReader>> evidence_readers;
  CheckReplicaDigests(replicas.digests, &report, [&](const std::string& path, std::vector<Tensor*> tensors) {
    auto& reader = evidence_readers[path];
    if (reader == nullptr) reader = std::make_unique<DeferredTensorReader>(path, true);
    return reader->Load(std::move(tensors));
  });
  report.Finish();
  return report;
}

}  // namespace

}  // namespace ttrace::analyzer
