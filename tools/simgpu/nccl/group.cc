// Faults are applied on the worker right after the collective wrote its result, before any later work on the
// stream can read it, through simgpu::ApplyFaults (which matches the spec's rank against this process's RANK).
#include "tools/simgpu/nccl/group.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace simgpu::nccl {
namespace {

struct DeferredInit {
  ncclComm* comm;
  int nranks;
  ncclUniqueId id;
  int rank;
  int device;
};

struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::vector<Op> ops;
  std::vector<DeferredInit> inits;
};

thread_local GroupState t_group;
std::atomic<int64_t> g_collective_calls{0};

struct Task {
  Comm* comm;
  uint64_t ticket;
  std::vector<Op> ops;
};

// Lets a task's other streams reach the group before it runs and hold them until it finished.
struct Join {
  std::mutex mu;
  std::condition_variable cv;
  size_t arrived = 0;
  bool done = false;
};

void RunTask(const Task& t) {
  Comm& c = *t.comm;
  c.WaitTurn(t.ticket);
  std::string error;
  ncclResult_t r = c.status();
  std::vector<const Op*> p2p;
  for (const Op& op : t.ops) {
    if (IsP2P(op.kind)) {
      p2p.push_back(&op);
      continue;
    }
    if (r != ncclSuccess) break;
    r = RunCollective(c, op, &error);
    if (r == ncclSuccess) {
      size_t n = ResultElements(c, op);
      simgpu::ApplyFaults(simgpu::FaultSite::kCollective, op.fault_call, n > 0 ? op.recv : nullptr,
                          DataTypeSize(op.dtype), n);
    }
  }
  if (r == ncclSuccess && !p2p.empty()) r = RunP2P(c, p2p, &error);
  if (r != ncclSuccess && !error.empty()) c.Fail(r, error);
  c.EndTurn(t.ticket);
}

void EnqueueTask(std::shared_ptr<Task> task) {
  std::vector<simgpu::Stream*> streams;
  for (const Op& op : task->ops) {
    bool seen = false;
    for (simgpu::Stream* s : streams) seen |= s == op.stream;
    if (!seen) streams.push_back(op.stream);
  }
  if (streams.size() == 1) {
    simgpu::Enqueue(streams[0], [task] { RunTask(*task); });
    return;
  }
  auto join = std::make_shared<Join>();
  const size_t others = streams.size() - 1;
  for (size_t i = 1; i < streams.size(); ++i) {
    simgpu::Enqueue(streams[i], [join] {
      std::unique_lock<std::mutex> lock(join->mu);
      ++join->arrived;
      join->cv.notify_all();
      join->cv.wait(lock, [&] { return join->done; });
    });
  }
  simgpu::Enqueue(streams[0], [task, join, others] {
    {
      std::unique_lock<std::mutex> lock(join->mu);
      join->cv.wait(lock, [&] { return join->arrived == others; });
    }
    RunTask(*task);
    std::lock_guard<std::mutex> lock(join->mu);
    join->done = true;
    join->cv.notify_all();
  });
}

void Issue(std::vector<Op> ops) {
  std::vector<std::shared_ptr<Task>> tasks;
  for (Op& op : ops) {
    std::shared_ptr<Task> task;
    for (auto& t : tasks) {
      if (t->comm == op.comm) task = t;
    }
    if (task == nullptr) {
      task = std::make_shared<Task>();
      task->comm = op.comm;
      tasks.push_back(task);
    }
    task->ops.push_back(op);
  }
  for (auto& task : tasks) {
    task->ticket = task->comm->BeginIssue();
    EnqueueTask(task);
  }
}

ncclResult_t RunInits(const std::vector<DeferredInit>& inits) {
  if (inits.size() == 1) {
    const DeferredInit& d = inits[0];
    return d.comm->InitRank(d.nranks, d.id, d.rank, d.device);
  }
  std::vector<std::thread> threads;
  for (const DeferredInit& d : inits) {
    threads.emplace_back([d] { d.comm->InitRank(d.nranks, d.id, d.rank, d.device); });
  }
  for (auto& t : threads) t.join();
  for (const DeferredInit& d : inits) {
    if (d.comm->status() != ncclSuccess) return d.comm->status();
  }
  return ncclSuccess;
}

}  // namespace

bool InGroup() { return t_group.depth > 0; }

ncclResult_t GroupStart() {
  ++t_group.depth;
  return ncclSuccess;
}

ncclResult_t GroupEnd() {
  if (t_group.depth == 0) {
    Warn("ncclGroupEnd: not inside a group (ncclGroupStart was not called)");
    return ncclInvalidUsage;
  }
  if (--t_group.depth > 0) return ncclSuccess;
  GroupState g = std::move(t_group);
  t_group = GroupState();
  ncclResult_t r = g.inits.empty() ? ncclSuccess : RunInits(g.inits);
  if (g.error != ncclSuccess) {
    if (!g.ops.empty()) Warn("ncclGroupEnd: a call in the group failed; none of its %zu operations was issued", g.ops.size());
    return g.error;
  }
  if (!g.ops.empty()) Issue(std::move(g.ops));
  return r;
}

void Submit(const Op& op) {
  if (InGroup()) {
    t_group.ops.push_back(op);
  } else {
    Issue({op});
  }
}

void RecordGroupError(ncclResult_t error) {
  if (InGroup() && t_group.error == ncclSuccess) t_group.error = error;
}

void DeferInit(ncclComm* comm, int nranks, const ncclUniqueId& id, int rank, int device) {
  t_group.inits.push_back(DeferredInit{comm, nranks, id, rank, device});
}

int64_t NextCollectiveCall() { return g_collective_calls.fetch_add(1); }

}  // namespace simgpu::nccl
