// NCCL interceptors. This file includes nccl.h so that an interceptor whose signature drifts from the vendor's
// declaration does not compile; the real functions are the strong pnccl* aliases (interception.cc).
//
// Communicator and group calls. Communicator calls feed CommRegistry (identity, rank, size, device) and are
// recorded without a seq; collectives and point-to-point calls are in nccl_collectives.cc, and how all of them
// capture (groups, non-blocking communicators) is nccl_capture.{h,cc}.
//
// Identity across ranks, whatever created the communicator: ncclCommInitRank and ncclCommInitRankConfig hash the
// unique id, ncclCommInitRankScalable all its ids, ncclCommSplit (parent identity, the parent's split number,
// color), ncclCommShrink (parent identity, the parent's shrink number, the excluded ranks) (comm_registry.h). A
// child's rank and size come from NCCL after the split or shrink (the key orders them, or the ranks left).
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "shim/capture_engine.h"
#include "shim/comm_registry.h"
#include "shim/interception.h"
#include "shim/nccl_capture.h"
#include "shim/runtime.h"

#define TTRACE_LIBRARY kNccl
#define TTRACE_UNRESOLVED_STATUS ncclInternalError

namespace ttrace::shim {
namespace {

format::CommInitRecord InitRecord(format::ApiId api, ncclResult_t status, const CommInfo& info, uint64_t handle,
                                  uint64_t t_ns) {
  format::CommInitRecord r;
  memset(&r, 0, sizeof r);
  r.api = static_cast<uint16_t>(api);
  r.status = status;
  r.comm_hash = info.hash;
  r.comm_handle = handle;
  r.comm_rank = info.rank;
  r.comm_size = info.size;
  r.cuda_device = info.device;
  r.t_ns = t_ns;
  return r;
}

bool Created(ncclResult_t status) { return status == ncclSuccess || status == ncclInProgress; }

// ncclCommInitRank, ncclCommInitRankConfig and ncclCommInitRankScalable, whose identity is `hash`.
template <typename Real>
ncclResult_t TraceInitRank(format::ApiId api, ncclComm_t* comm, int nranks, uint64_t hash, int rank,
                           const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const ncclResult_t status = real();
  CommInfo info;
  info.hash = hash;
  info.rank = rank;
  info.size = nranks;
  uint64_t handle = 0;
  if (Created(status) && comm != nullptr) {
    handle = reinterpret_cast<uint64_t>(*comm);
    info.device = DescribeComm(*comm).device;
    Comms().Add(handle, info);
  }
  engine->Publish(slot, format::RecordType::kCommInit, InitRecord(api, status, info, handle, t));
  return status;
}

// ncclCommDestroy, ncclCommAbort and ncclCommFinalize, recorded as CommDestroyRecords with their api.
// Destroy and abort end the communicator: snapshots still pending on it are dropped with a notice (its operations
// were never reported enqueued), it leaves the registry, and the sink is flushed (a process often dies right
// after). Finalize only flushes NCCL's work; the communicator lives on until its destroy.
template <typename Real>
ncclResult_t TraceCommEnd(format::ApiId api, ncclComm_t comm, const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const uint64_t handle = reinterpret_cast<uint64_t>(comm);
  const bool ends = api != format::ApiId::kNcclCommFinalize;
  if (ends) {
    ReleasePending(engine, handle, ncclInvalidUsage,
                   std::string("output of a non-blocking operation never reported complete before ") +
                       format::ApiName(static_cast<uint16_t>(api)));
  }
  const ncclResult_t status = real();
  CommInfo info;
  if (comm != nullptr) {
    if (ends)
      Comms().Remove(handle, &info);
    else
      Comms().Find(handle, &info);
  }
  format::CommDestroyRecord r;
  memset(&r, 0, sizeof r);
  r.api = static_cast<uint16_t>(api);
  r.status = status;
  r.comm_hash = info.hash;
  r.comm_handle = handle;
  r.t_ns = t;
  engine->Publish(slot, format::RecordType::kCommDestroy, r);
  if (ends) engine->FlushAndWait(std::max(2000, static_cast<int>(2 * GetOptions().flush_ms)));
  return status;
}

uint64_t IdHash(const ncclUniqueId* ids, int n) {
  return n < 1 || ids == nullptr ? 0 : Fnv1a64(ids, sizeof(ncclUniqueId) * static_cast<size_t>(n));
}

// ncclCommSplit and ncclCommShrink: a child of `parent`, whose identity `child_hash(parent identity, number)` every
// member of the child computes alike from the parent's next split (or shrink) number, which `next_number` takes
// (CommRegistry::NextSplit or NextShrink). `creates` false (NCCL_SPLIT_NOCOLOR) makes no communicator: a record
// with handle 0. The number advances on every rank that calls, member of the child or not.
template <typename NextNumber, typename ChildHash, typename Real>
ncclResult_t TraceChild(format::ApiId api, ncclComm_t parent, bool creates, ncclComm_t* newcomm,
                        const NextNumber& next_number, const ChildHash& child_hash, const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  CommInfo parent_info;
  uint64_t number = 0;
  const uint64_t parent_handle = reinterpret_cast<uint64_t>(parent);
  if (parent != nullptr && !next_number(parent_handle, &parent_info, &number)) {
    Comms().Add(parent_handle, DescribeComm(parent));  // created through an API the shim does not intercept
    next_number(parent_handle, &parent_info, &number);
  }
  const ncclResult_t status = real();
  CommInfo info;
  uint64_t handle = 0;
  if (Created(status) && newcomm != nullptr && *newcomm != nullptr && creates) {
    handle = reinterpret_cast<uint64_t>(*newcomm);
    info = DescribeComm(*newcomm);  // -1s while a non-blocking creation is in progress: completed at the first op
    info.hash = child_hash(parent_info.hash, number);
    Comms().Add(handle, info);
  }
  engine->Publish(slot, format::RecordType::kCommInit, InitRecord(api, status, info, handle, t));
  return status;
}

}  // namespace
}  // namespace ttrace::shim

using ttrace::format::ApiId;
using ttrace::format::RecordType;
using ttrace::shim::CaptureEngine;
using ttrace::shim::CommInfo;
using ttrace::shim::Comms;
using ttrace::shim::Engine;
using ttrace::shim::MonotonicNs;

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank),
                   (comm, nranks, commId, rank)) {
  return ttrace::shim::TraceInitRank(ApiId::kNcclCommInitRank, comm, nranks, ttrace::shim::IdHash(&commId, 1), rank,
                                     [&] { return REAL(ncclCommInitRank)(comm, nranks, commId, rank); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitRankConfig,
                   (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),
                   (comm, nranks, commId, rank, config)) {
  return ttrace::shim::TraceInitRank(ApiId::kNcclCommInitRankConfig, comm, nranks, ttrace::shim::IdHash(&commId, 1),
                                     rank,
                                     [&] { return REAL(ncclCommInitRankConfig)(comm, nranks, commId, rank, config); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitRankScalable,
                   (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config),
                   (newcomm, nranks, myrank, nId, commIds, config)) {
  return ttrace::shim::TraceInitRank(
      ApiId::kNcclCommInitRankScalable, newcomm, nranks, ttrace::shim::IdHash(commIds, nId), myrank,
      [&] { return REAL(ncclCommInitRankScalable)(newcomm, nranks, myrank, nId, commIds, config); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommSplit,
                   (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),
                   (comm, color, key, newcomm, config)) {
  return ttrace::shim::TraceChild(
      ApiId::kNcclCommSplit, comm, color != NCCL_SPLIT_NOCOLOR, newcomm,
      [](uint64_t parent, CommInfo* info, uint64_t* n) { return Comms().NextSplit(parent, info, n); },
      [&](uint64_t parent_hash, uint64_t n) { return ttrace::shim::SplitHash(parent_hash, n, color); },
      [&] { return REAL(ncclCommSplit)(comm, color, key, newcomm, config); });
}

// NCCL_SHRINK_ABORT terminates the parent's operations in flight first: output snapshots still waiting for a
// non-blocking one to be reported enqueued are dropped with a notice, as at ncclCommAbort.
TTRACE_INTERCEPTOR(ncclResult_t, ncclCommShrink,
                   (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                    ncclConfig_t* config, int shrinkFlags),
                   (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags)) {
  CaptureEngine* engine = Engine();
  if (engine != nullptr && (shrinkFlags & NCCL_SHRINK_ABORT) != 0)
    ttrace::shim::ReleasePending(engine, reinterpret_cast<uint64_t>(comm), ncclInvalidUsage,
                                 "output of a non-blocking operation aborted by ncclCommShrink (NCCL_SHRINK_ABORT)");
  return ttrace::shim::TraceChild(
      ApiId::kNcclCommShrink, comm, /*creates=*/true, newcomm,
      [](uint64_t parent, CommInfo* info, uint64_t* n) { return Comms().NextShrink(parent, info, n); },
      [&](uint64_t parent_hash, uint64_t n) {
        return ttrace::shim::ShrinkHash(parent_hash, n, excludeRanksList, excludeRanksCount);
      },
      [&] {
        return REAL(ncclCommShrink)(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
      });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist),
                   (comm, ndev, devlist)) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return REAL(ncclCommInitAll)(comm, ndev, devlist);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const ncclResult_t status = REAL(ncclCommInitAll)(comm, ndev, devlist);
  CommInfo info;
  info.hash = ttrace::shim::InitAllHash(static_cast<uint32_t>(getpid()), Comms().NextInitAll());
  info.size = ndev;
  if (!ttrace::shim::Created(status) || comm == nullptr || ndev < 1) {
    engine->Publish(slot, RecordType::kCommInit,
                    ttrace::shim::InitRecord(ApiId::kNcclCommInitAll, status, info, 0, t));
    return status;
  }
  for (int i = 0; i < ndev; ++i) {
    info.rank = i;
    info.device = devlist != nullptr ? devlist[i] : i;
    const uint64_t handle = reinterpret_cast<uint64_t>(comm[i]);
    Comms().Add(handle, info);
    engine->Publish(i == 0 ? slot : engine->Reserve(/*op=*/false), RecordType::kCommInit,
                    ttrace::shim::InitRecord(ApiId::kNcclCommInitAll, status, info, handle, t));
  }
  return status;
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm)) {
  return ttrace::shim::TraceCommEnd(ApiId::kNcclCommDestroy, comm, [&] { return REAL(ncclCommDestroy)(comm); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm)) {
  return ttrace::shim::TraceCommEnd(ApiId::kNcclCommAbort, comm, [&] { return REAL(ncclCommAbort)(comm); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm)) {
  return ttrace::shim::TraceCommEnd(ApiId::kNcclCommFinalize, comm, [&] { return REAL(ncclCommFinalize)(comm); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclGroupStart, (), ()) {
  return ttrace::shim::TraceGroup(/*start=*/true, [&] { return REAL(ncclGroupStart)(); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclGroupEnd, (), ()) {
  return ttrace::shim::TraceGroup(/*start=*/false, [&] { return REAL(ncclGroupEnd)(); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError),
                   (comm, asyncError)) {
  const ncclResult_t status = REAL(ncclCommGetAsyncError)(comm, asyncError);
  CaptureEngine* engine = Engine();
  if (engine == nullptr || status != ncclSuccess || asyncError == nullptr || *asyncError == ncclInProgress)
    return status;
  ttrace::shim::ReleasePending(engine, reinterpret_cast<uint64_t>(comm), *asyncError,
                               "output of a non-blocking operation whose communicator reported an asynchronous error");
  return status;
}
