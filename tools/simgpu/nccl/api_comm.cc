// Communicator management entry points of libnccl.so.2. Argument checks and return codes follow NCCL 2.28
// (init.cc, argcheck.cc); a NULL communicator passed to ncclCommDestroy/ncclCommAbort is a no-op, as there.
#include <cstring>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/group.h"
#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/nccl_api.h"
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

ncclResult_t InitRank(ncclComm_t* newcomm, int nranks, const ncclUniqueId& id, int rank, const char* fn) {
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
  const int device = simgpu::CurrentDevice();
  auto* comm = new ncclComm;
  if (simgpu::nccl::InGroup()) {
    comm->MarkInitPending();
    simgpu::nccl::DeferInit(comm, nranks, id, rank, device);
    *newcomm = comm;
    return ncclSuccess;
  }
  ncclResult_t r = comm->InitRank(nranks, id, rank, device);
  if (r != ncclSuccess) {
    delete comm;
    *newcomm = nullptr;
    return r;
  }
  *newcomm = comm;
  return ncclSuccess;
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
  return InitRank(newcomm, nranks, comm_id, rank, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* newcomm, int nranks, ncclUniqueId comm_id, int rank,
         ncclConfig_t* config) {
  if (config != nullptr && config->magic != kConfigMagic) {
    Warn("ncclCommInitRankConfig: config was not initialized with NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  return InitRank(newcomm, nranks, comm_id, rank, "ncclCommInitRankConfig");
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

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (comm == nullptr) {
    Warn("ncclCommFinalize: comm argument is NULL");
    return ncclInvalidArgument;
  }
  comm->WaitIdle();
  return comm->status();
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->WaitIdle();
  delete comm;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->Abort();
  comm->WaitIdle();
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

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (ptr != nullptr) simgpu::FreeDevice(ptr);
  return ncclSuccess;
}
