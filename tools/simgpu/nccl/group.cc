// Under stream capture a task is recorded as a closure the graph replays at each launch, reading the buffers
// then; its collectives keep the fault call numbers they took at capture. It cannot take a ticket at issue (a
// launch replays it many times), so it runs when its stream reaches it, one task at a time with the others
// (Comm::BeginCapturedTurn); ranks agree on the order because each launches its graphs and issues its other
// calls in the same stream order, as NCCL requires on a GPU. A multi-stream task is joined through events
// recorded into the capture instead of the blocking join below, which a replay in capture order would deadlock.
//
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

// The task's operations, inside the communicator's turn.
void RunOps(Comm& c, const std::vector<Op>& ops) {
  std::string error;
  ncclResult_t r = c.error();
  std::vector<const Op*> p2p;
  for (const Op& op : ops) {
    if (IsP2P(op.kind)) {
      p2p.push_back(&op);
      continue;
    }
    if (r != ncclSuccess) break;
    r = RunFaultedCollective(c, op, &error);
  }
  if (r == ncclSuccess && !p2p.empty()) r = RunP2P(c, p2p, &error);
  if (r != ncclSuccess && !error.empty()) c.Fail(r, error);
}

void RunTask(const Task& t) {
  t.comm->WaitTurn(t.ticket);
  RunOps(*t.comm, t.ops);
  t.comm->EndTurn(t.ticket);
}

// Run once per launch of the graph it was recorded in: no ticket, no one-shot state.
void RunCapturedTask(const Task& t) {
  t.comm->BeginCapturedTurn();
  RunOps(*t.comm, t.ops);
  t.comm->EndCapturedTurn();
}

std::vector<simgpu::Stream*> TaskStreams(const Task& task) {
  std::vector<simgpu::Stream*> streams;
  for (const Op& op : task.ops) {
    bool seen = false;
    for (simgpu::Stream* s : streams) seen |= s == op.stream;
    if (!seen) streams.push_back(op.stream);
  }
  return streams;
}

// Makes `to` depend on the work recorded on `from` so far, as NCCL joins a group's streams in a capture.
void CaptureDependency(simgpu::Stream* from, simgpu::Stream* to) {
  simgpu::Event* ev = simgpu::CreateEvent(cudaEventDisableTiming);
  simgpu::RecordEvent(ev, from);
  simgpu::StreamWaitEvent(to, ev);
  simgpu::DestroyEvent(ev);
}

// Records the task into the capture its streams take part in: the first stream's node runs the task after the
// other streams' earlier work, and their later work depends on it.
void EnqueueCapturedTask(std::shared_ptr<Task> task, const std::vector<simgpu::Stream*>& streams) {
  for (size_t i = 1; i < streams.size(); ++i) CaptureDependency(streams[i], streams[0]);
  simgpu::Enqueue(streams[0], [task] { RunCapturedTask(*task); });
  for (size_t i = 1; i < streams.size(); ++i) CaptureDependency(streams[0], streams[i]);
}

// NCCL's rule for a group under capture: all of a task's streams are captured by the same capture, or none is.
// Returns 1 when captured, 0 when not, -1 (logged) when mixed.
int CaptureState(const std::vector<simgpu::Stream*>& streams) {
  unsigned long long first_id = 0;
  int captured = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    unsigned long long id = 0;
    const bool on = simgpu::CaptureInfo(streams[i], &id, nullptr, nullptr) != cudaStreamCaptureStatusNone;
    if (i == 0) {
      captured = on ? 1 : 0;
      first_id = id;
    } else if ((on ? 1 : 0) != captured || (on && id != first_id)) {
      Warn("ncclGroupEnd: either none or all of the streams of a communicator's operations in a group must be "
           "captured by the same graph");
      return -1;
    }
  }
  return captured;
}

void EnqueueTask(std::shared_ptr<Task> task, const std::vector<simgpu::Stream*>& streams) {
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

ncclResult_t Issue(std::vector<Op> ops) {
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
  std::vector<std::vector<simgpu::Stream*>> streams;
  std::vector<int> captured;
  for (auto& task : tasks) {
    streams.push_back(TaskStreams(*task));
    captured.push_back(CaptureState(streams.back()));
    if (captured.back() < 0) return ncclInvalidUsage;
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (captured[i]) {
      EnqueueCapturedTask(tasks[i], streams[i]);
    } else {
      tasks[i]->ticket = tasks[i]->comm->BeginIssue();
      EnqueueTask(tasks[i], streams[i]);
    }
  }
  return ncclSuccess;
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
  if (!g.ops.empty()) {
    ncclResult_t issued = Issue(std::move(g.ops));
    if (issued != ncclSuccess) return issued;
  }
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
