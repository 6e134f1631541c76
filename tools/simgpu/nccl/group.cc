// Faults are applied on the worker right after the collective wrote its result, before any later work on the
// stream can read it (coll_faults.h).
//
// Background jobs are detached threads; each communicator they touch counts them (Comm::BeginAsync/EndAsync)
// and ncclCommDestroy/Abort wait for that count to drop to zero before deleting the communicator.
#include "tools/simgpu/nccl/group.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/simgpu/nccl/coll_faults.h"
#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/params.h"
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

struct DeferredSplit {
  ncclComm* parent;
  int color;
  int key;
  ncclComm* child;
  ncclComm_t* newcomm;
};

struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  int blocking = -1;  // -1 until a communicator joins the group
  int job_blocking = -1;  // mode of the inits and splits, which must all agree
  std::vector<Op> ops;
  std::vector<DeferredInit> inits;
  std::vector<DeferredSplit> splits;
};

thread_local GroupState t_group;

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
  ncclResult_t r = c.error();
  std::vector<const Op*> p2p;
  for (const Op& op : t.ops) {
    if (IsP2P(op.kind)) {
      p2p.push_back(&op);
      continue;
    }
    if (r != ncclSuccess) break;
    r = RunFaultedCollective(c, op, &error);
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

ncclResult_t RunSplit(const DeferredSplit& d) {
  ncclResult_t r = d.parent->Split(d.color, d.key, d.child);
  if (d.child == nullptr) return r;
  if (r != ncclSuccess && d.parent->blocking()) {
    delete d.child;
    return r;
  }
  __atomic_store_n(d.newcomm, static_cast<ncclComm_t>(d.child), __ATOMIC_RELEASE);
  return r;
}

// Inits and splits, concurrently when there are several (each waits for its peers, which may be other entries).
ncclResult_t RunJoins(const std::vector<DeferredInit>& inits, const std::vector<DeferredSplit>& splits) {
  std::vector<std::function<ncclResult_t()>> work;
  for (const DeferredInit& d : inits) {
    work.push_back([d] { return d.comm->InitRank(d.nranks, d.id, d.rank, d.device); });
  }
  for (const DeferredSplit& d : splits) work.push_back([d] { return RunSplit(d); });
  if (work.empty()) return ncclSuccess;
  if (work.size() == 1) return work[0]();
  std::vector<ncclResult_t> results(work.size(), ncclSuccess);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < work.size(); ++i) threads.emplace_back([&, i] { results[i] = work[i](); });
  for (auto& t : threads) t.join();
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

ncclResult_t Launch(GroupState& g) {
  ncclResult_t r = RunJoins(g.inits, g.splits);
  if (g.error != ncclSuccess) {
    if (!g.ops.empty()) {
      Warn("ncclGroupEnd: a call in the group failed; none of its %zu operations was issued", g.ops.size());
    }
    return g.error;
  }
  if (!g.ops.empty()) Issue(std::move(g.ops));
  return r;
}

void SleepAsyncDelay() {
  const double s = AsyncDelaySeconds();
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// Every communicator the group touches, once each.
std::vector<Comm*> GroupComms(const GroupState& g) {
  std::vector<Comm*> comms;
  auto add = [&](Comm* c) {
    for (Comm* x : comms) {
      if (x == c) return;
    }
    comms.push_back(c);
  };
  for (const DeferredInit& d : g.inits) add(d.comm);
  for (const DeferredSplit& d : g.splits) add(d.parent);
  for (const Op& op : g.ops) add(op.comm);
  return comms;
}

ncclResult_t JoinJobMode(const Comm& comm, const char* fn) {
  const int mode = comm.blocking() ? 1 : 0;
  if (t_group.job_blocking == -1) {
    t_group.job_blocking = mode;
  } else if (t_group.job_blocking != mode) {
    Warn("%s: Blocking and nonblocking communicators are not allowed in the same group.", fn);
    RecordGroupError(ncclInvalidArgument);
    return ncclInvalidArgument;
  }
  t_group.blocking = mode;
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
  auto g = std::make_shared<GroupState>(std::move(t_group));
  t_group = GroupState();
  const bool work = !g->ops.empty() || !g->inits.empty() || !g->splits.empty();
  if (g->blocking != 0 || !work) return Launch(*g);
  std::vector<Comm*> comms = GroupComms(*g);
  for (Comm* c : comms) c->BeginAsync();
  std::thread([g, comms] {
    SleepAsyncDelay();
    Launch(*g);
    for (Comm* c : comms) c->EndAsync();
  }).detach();
  return ncclInProgress;
}

void Submit(const Op& op) {
  t_group.blocking = op.comm->blocking() ? 1 : 0;
  t_group.ops.push_back(op);
}

void RecordGroupError(ncclResult_t error) {
  if (InGroup() && error != ncclInProgress && t_group.error == ncclSuccess) t_group.error = error;
}

ncclResult_t DeferInit(ncclComm* comm, int nranks, const ncclUniqueId& id, int rank, int device) {
  ncclResult_t r = JoinJobMode(*comm, "ncclCommInitRank");
  if (r == ncclSuccess) t_group.inits.push_back(DeferredInit{comm, nranks, id, rank, device});
  return r;
}

ncclResult_t DeferSplit(ncclComm* parent, int color, int key, ncclComm* child, ncclComm_t* newcomm) {
  ncclResult_t r = JoinJobMode(*parent, "ncclCommSplit");
  if (r == ncclSuccess) t_group.splits.push_back(DeferredSplit{parent, color, key, child, newcomm});
  return r;
}

ncclResult_t RunJob(ncclComm* comm, const std::function<void()>& job) {
  if (comm->blocking()) {
    job();
    return ncclSuccess;
  }
  comm->BeginAsync();
  std::thread([comm, job] {
    SleepAsyncDelay();
    job();
    comm->EndAsync();
  }).detach();
  return ncclInProgress;
}

}  // namespace simgpu::nccl
