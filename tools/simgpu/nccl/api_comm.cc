// Communicator management entry points of libnccl.so.2. Argument checks and return codes follow NCCL 2.28
// (init.cc, argcheck.cc); a NULL communicator passed to ncclCommDestroy/ncclCommAbort is a no-op, as there.
// Inits and splits run as jobs of an (implicit) group (group.h): at once for blocking communicators, on a
// background thread for non-blocking ones, which return ncclInProgress until ncclCommGetAsyncError says the
// job is done.
#include <cstring>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/coll_faults.h"
#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/group.h"
#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/nccl_api.h"
#include "tools/simgpu/nccl/params.h"
#include "tools/simgpu/nccl/segment.h"

using simgpu::nccl::Warn;

namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

ncclResult_t CheckCommArg(ncclComm_t comm, const void* out, const char* fn, const char* out_name) {
  if (comm == nullptr) {
    Warn("%s: comm argument is NULL", fn);
    return ncclInvalidArgument;
  }
  if (out == nullptr) {
    Warn("%s: %s argument is NULL", fn, out_name);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// parseCommConfig: only `blocking` matters to simgpu. The application's struct may be older (smaller) than
// ours: copy what its `size` says.
ncclResult_t ParseBlocking(const ncclConfig_t* config, bool fallback, bool* blocking) {
  *blocking = fallback;
  if (config != nullptr) {
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    size_t size = config->size < sizeof c ? config->size : sizeof c;
    std::memcpy(&c, config, size);
    if (c.magic != kConfigMagic) {
      Warn("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
      return ncclInvalidArgument;
    }
    if (c.version >= NCCL_VERSION(2, 14, 0) && c.blocking != NCCL_CONFIG_UNDEF_INT) {
      if (c.blocking != 0 && c.blocking != 1) {
        Warn("Invalid config blocking attribute value %d", c.blocking);
        return ncclInvalidArgument;
      }
      *blocking = c.blocking == 1;
    }
  }
  const int env = simgpu::nccl::CommBlockingOverride();
  if (env >= 0) *blocking = env == 1;
  return ncclSuccess;
}

// ncclCommInitRankDev inside an (implicit) group: the init runs at the outermost ncclGroupEnd, on a background
// thread for a non-blocking communicator. *newcomm is set at once, as NCCL does.
ncclResult_t InitRank(ncclComm_t* newcomm, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config, const char* fn) {
  if (newcomm == nullptr) {
    Warn("%s: newcomm argument is NULL", fn);
    return ncclInvalidArgument;
  }
  if (nranks < 1) {
    Warn("%s: invalid nranks %d", fn, nranks);
    return ncclInvalidArgument;
  }
  if (rank < 0 || rank >= nranks) {
    Warn("%s: rank %d is out of range 0..%d", fn, rank, nranks - 1);
    return ncclInvalidArgument;
  }
  bool blocking = true;
  ncclResult_t r = ParseBlocking(config, true, &blocking);
  if (r != ncclSuccess) return r;
  auto* comm = new ncclComm;
  comm->set_blocking(blocking);
  comm->MarkInitPending();
  simgpu::nccl::GroupStart();
  r = simgpu::nccl::DeferInit(comm, nranks, id, rank, simgpu::CurrentDevice());
  *newcomm = r == ncclSuccess ? comm : nullptr;
  ncclResult_t end = simgpu::nccl::GroupEnd();
  if (r != ncclSuccess) {
    delete comm;
    return r;
  }
  if (!blocking) return end == ncclInProgress || end == ncclSuccess ? comm->status() : end;
  if (end != ncclSuccess && !simgpu::nccl::InGroup()) {
    delete comm;
    *newcomm = nullptr;
  }
  return end;
}

}  // namespace

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == nullptr) {
    Warn("ncclGetVersion: version argument is NULL");
    return ncclInvalidArgument;
  }
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* unique_id) {
  if (unique_id == nullptr) {
    Warn("ncclGetUniqueId: uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  return simgpu::nccl::MakeUniqueId(unique_id);
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* newcomm, int nranks, ncclUniqueId comm_id, int rank) {
  return InitRank(newcomm, nranks, comm_id, rank, nullptr, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* newcomm, int nranks, ncclUniqueId comm_id, int rank,
         ncclConfig_t* config) {
  return InitRank(newcomm, nranks, comm_id, rank, config, "ncclCommInitRankConfig");
}

// Every rank passes the same ids; one segment per communicator is enough, so the first id names it.
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int rank, int nid,
         ncclUniqueId* comm_ids, ncclConfig_t* config) {
  if (nid < 1 || comm_ids == nullptr) {
    Warn("ncclCommInitRankScalable: invalid nId %d or commIds %p", nid, static_cast<void*>(comm_ids));
    return ncclInvalidArgument;
  }
  return InitRank(newcomm, nranks, comm_ids[0], rank, config, "ncclCommInitRankScalable");
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  if (comm == nullptr || newcomm == nullptr) {
    Warn("ncclCommSplit: %s argument is NULL", comm == nullptr ? "comm" : "newcomm");
    return ncclInvalidArgument;
  }
  ncclResult_t st = comm->status();
  if (st != ncclSuccess) {
    Warn("ncclCommSplit: %s", st == ncclInProgress
                                  ? "Attempt to use communicator before the previous operation returned ncclSuccess"
                                  : "the communicator is unusable after an earlier error");
    return st == ncclInProgress ? ncclInvalidArgument : st;
  }
  *newcomm = nullptr;
  ncclComm* child = nullptr;
  if (color != NCCL_SPLIT_NOCOLOR) {
    bool blocking = true;
    ncclResult_t r = ParseBlocking(config, comm->blocking(), &blocking);
    if (r != ncclSuccess) return r;
    child = new ncclComm;
    child->set_blocking(blocking);
  }
  simgpu::nccl::GroupStart();
  ncclResult_t r = simgpu::nccl::DeferSplit(comm, color, key, child, newcomm);
  if (r != ncclSuccess) delete child;
  ncclResult_t end = simgpu::nccl::GroupEnd();
  if (r != ncclSuccess) return r;
  return end == ncclInProgress ? ncclSuccess : end;
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) {
    Warn("ncclCommInitAll: comms argument is NULL");
    return ncclInvalidArgument;
  }
  const int total = simgpu::DeviceCount();
  if (ndev < 1 || (devlist == nullptr && ndev > total)) {
    Warn("ncclCommInitAll: invalid ndev %d (%d devices)", ndev, total);
    return ncclInvalidArgument;
  }
  std::vector<int> devices(ndev);
  for (int i = 0; i < ndev; ++i) {
    devices[i] = devlist != nullptr ? devlist[i] : i;
    if (devices[i] < 0 || devices[i] >= total) {
      Warn("ncclCommInitAll: invalid device %d (%d devices)", devices[i], total);
      return ncclInvalidArgument;
    }
    for (int j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        Warn("ncclCommInitAll: duplicate device %d in devlist", devices[i]);
        return ncclInvalidUsage;
      }
    }
  }
  std::vector<simgpu::nccl::Comm*> created;
  for (int i = 0; i < ndev; ++i) created.push_back(new ncclComm);
  ncclResult_t r = simgpu::nccl::Comm::InitAll(created, devices);
  for (int i = 0; i < ndev; ++i) {
    if (r != ncclSuccess) delete static_cast<ncclComm*>(created[i]);
    comms[i] = r == ncclSuccess ? static_cast<ncclComm*>(created[i]) : nullptr;
  }
  return r;
}

// As NCCL 2.28: a NULL communicator is a no-op; a second finalize is ncclInvalidArgument; a non-blocking
// communicator returns ncclInProgress and reports ncclSuccess once its issued work has run.
NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  ncclResult_t st = comm->status();
  if (st == ncclInProgress) {
    Warn("ncclCommFinalize: Attempt to use communicator before the previous operation returned ncclSuccess");
    return ncclInvalidArgument;
  }
  if (st != ncclSuccess) return st;
  if (!comm->MarkFinalized()) {
    Warn("ncclCommFinalize: the communicator was finalized already");
    return ncclInvalidArgument;
  }
  ncclResult_t r = simgpu::nccl::RunJob(comm, [comm] { comm->WaitIdle(); });
  return r == ncclInProgress ? comm->status() : comm->error();
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->WaitAsync();
  comm->WaitIdle();
  simgpu::nccl::ForgetCommResults(comm);
  delete comm;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->Abort();
  comm->WaitAsync();
  comm->WaitIdle();
  simgpu::nccl::ForgetCommResults(comm);
  delete comm;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  ncclResult_t r = CheckCommArg(comm, count, "ncclCommCount", "count");
  if (r == ncclSuccess) *count = comm->nranks();
  return r;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  ncclResult_t r = CheckCommArg(comm, device, "ncclCommCuDevice", "device");
  if (r == ncclSuccess) *device = comm->device();
  return r;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  ncclResult_t r = CheckCommArg(comm, rank, "ncclCommUserRank", "rank");
  if (r == ncclSuccess) *rank = comm->rank();
  return r;
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* async_error) {
  ncclResult_t r = CheckCommArg(comm, async_error, "ncclCommGetAsyncError", "asyncError");
  if (r == ncclSuccess) *async_error = comm->status();
  return r;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) { return simgpu::nccl::LastError(); }

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (ptr == nullptr || size == 0) {
    Warn("ncclMemAlloc: invalid argument (ptr %p, size %zu)", static_cast<void*>(ptr), size);
    return ncclInvalidArgument;
  }
  *ptr = simgpu::AllocDevice(size);
  return *ptr != nullptr ? ncclSuccess : ncclUnhandledCudaError;
}

// Registration only speeds NCCL up; simgpu needs none, so the handle is the buffer itself.
NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  ncclResult_t r = CheckCommArg(comm, handle, "ncclCommRegister", "handle");
  if (r == ncclSuccess) *handle = buff;
  return r;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return CheckCommArg(comm, handle, "ncclCommDeregister", "handle");
}

// A window is a registration (NCCL uses it for symmetric-memory kernels); simgpu only remembers the buffer. As
// in NCCL 2.28, a NULL buffer or a zero size registers nothing and leaves *win as it was.
struct ncclWindow_vidmem {
  void* buff;
  size_t size;
};

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int win_flags) {
  ncclResult_t r = CheckCommArg(comm, win, "ncclCommWindowRegister", "win");
  if (r != ncclSuccess || buff == nullptr || size == 0) return r;
  if (comm->status() == ncclInProgress) {
    Warn("ncclCommWindowRegister: Attempt to use communicator before the previous operation returned ncclSuccess");
    return ncclInvalidArgument;
  }
  *win = new ncclWindow_vidmem{buff, size};
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  delete win;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (ptr != nullptr) simgpu::FreeDevice(ptr);
  return ncclSuccess;
}
