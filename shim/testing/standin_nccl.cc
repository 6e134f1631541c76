// The stand-in libnccl.so.2 (status_standin.h): every collective and point-to-point call answers
// STANDIN_NCCL_STATUS outside a group and success inside one, where ncclGroupEnd answers it; ncclCommInitRank
// answers it for a 2-rank communicator and creates a 1-rank one (rank 0 on device 0) whatever it says, so the
// collectives have a communicator to run on. The other communicator calls answer STANDIN_NCCL_SETUP_STATUS:
// ncclCommInitRankConfig, ncclCommInitRankScalable, ncclCommSplit, ncclCommShrink and ncclCommInitAll create a 1-rank
// communicator when it is ncclSuccess or ncclInProgress (a non-blocking creation returns the handle at once);
// ncclCommDestroy, ncclCommAbort and ncclCommFinalize answer it; ncclCommGetAsyncError answers it and reports the
// communicator done, except on the first communicator (ncclCommInitRank's), where it always succeeds, so the
// outputs of operations in progress there are released. As NCCL does, each ncclX is a weak alias of a strong
// pncclX (the shim forwards to pnccl).
#include <cstring>

#include "shim/testing/status_standin.h"

namespace {
struct Comm {
  int nranks, rank;
} g_comm{1, 0}, g_two{2, 1}, g_created[16];
int g_created_count = 0;
void* NewComm() {
  Comm* c = &g_created[g_created_count++ % 16];
  *c = Comm{1, 0};
  return c;
}
struct UniqueId {
  char internal[128];  // ncclUniqueId, passed by value (in memory, not in registers)
};
}  // namespace

#define STANDIN_NCCL_ALIAS(name, params) \
  extern "C" int name params __attribute__((weak, alias("p" #name)));

extern "C" int pncclGetUniqueId(UniqueId* id) {
  memset(id, 0x5a, sizeof *id);
  return 0;
}
STANDIN_NCCL_ALIAS(ncclGetUniqueId, (UniqueId*))
extern "C" int pncclCommInitRank(void** comm, int nranks, UniqueId, int rank) {
  if (nranks == 1 && rank == 0) {
    *comm = &g_comm;
    return 0;
  }
  const int status = standin::StatusFromEnv("STANDIN_NCCL_STATUS");
  if (status == 0 || status == 7) *comm = &g_two;  // a non-blocking creation returns its handle at once
  return status;
}
STANDIN_NCCL_ALIAS(ncclCommInitRank, (void**, int, UniqueId, int))
int SetupStatus() { return standin::StatusFromEnv("STANDIN_NCCL_SETUP_STATUS"); }
// A communicator-creating call's answer: the communicator exists after success or ncclInProgress.
int Create(void** comm) {
  const int status = SetupStatus();
  if (status == 0 || status == 7) *comm = NewComm();
  return status;
}
extern "C" int pncclCommInitRankConfig(void** comm, int, UniqueId, int, void*) { return Create(comm); }
STANDIN_NCCL_ALIAS(ncclCommInitRankConfig, (void**, int, UniqueId, int, void*))
extern "C" int pncclCommInitRankScalable(void** comm, int, int, int, UniqueId*, void*) { return Create(comm); }
STANDIN_NCCL_ALIAS(ncclCommInitRankScalable, (void**, int, int, int, UniqueId*, void*))
extern "C" int pncclCommSplit(void*, int, int, void** comm, void*) { return Create(comm); }
STANDIN_NCCL_ALIAS(ncclCommSplit, (void*, int, int, void**, void*))
extern "C" int pncclCommShrink(void*, int*, int, void** comm, void*, int) { return Create(comm); }
STANDIN_NCCL_ALIAS(ncclCommShrink, (void*, int*, int, void**, void*, int))
extern "C" int pncclCommInitAll(void** comms, int ndev, const int*) {
  const int status = SetupStatus();
  for (int i = 0; (status == 0 || status == 7) && i < ndev; ++i) comms[i] = NewComm();
  return status;
}
STANDIN_NCCL_ALIAS(ncclCommInitAll, (void**, int, const int*))
extern "C" int pncclCommDestroy(void*) { return SetupStatus(); }
STANDIN_NCCL_ALIAS(ncclCommDestroy, (void*))
extern "C" int pncclCommAbort(void*) { return SetupStatus(); }
STANDIN_NCCL_ALIAS(ncclCommAbort, (void*))
extern "C" int pncclCommFinalize(void*) { return SetupStatus(); }
STANDIN_NCCL_ALIAS(ncclCommFinalize, (void*))
extern "C" int pncclCommCount(const void* comm, int* n) {
  *n = static_cast<const Comm*>(comm)->nranks;
  return 0;
}
STANDIN_NCCL_ALIAS(ncclCommCount, (const void*, int*))
extern "C" int pncclCommUserRank(const void* comm, int* rank) {
  *rank = static_cast<const Comm*>(comm)->rank;
  return 0;
}
STANDIN_NCCL_ALIAS(ncclCommUserRank, (const void*, int*))
extern "C" int pncclCommCuDevice(const void*, int* device) {
  *device = 0;
  return 0;
}
STANDIN_NCCL_ALIAS(ncclCommCuDevice, (const void*, int*))
// Inside a group, calls succeed and the group's error surfaces at ncclGroupEnd (as NCCL documents).
thread_local int t_depth = 0;
extern "C" int pncclGroupStart() {
  ++t_depth;
  return 0;
}
STANDIN_NCCL_ALIAS(ncclGroupStart, ())
extern "C" int pncclGroupEnd() {
  if (t_depth > 0) --t_depth;
  return standin::StatusFromEnv("STANDIN_NCCL_STATUS");
}
STANDIN_NCCL_ALIAS(ncclGroupEnd, ())
extern "C" int pncclCommGetAsyncError(void* comm, int* async_error) {
  *async_error = 0;
  return comm == &g_comm ? 0 : SetupStatus();
}
STANDIN_NCCL_ALIAS(ncclCommGetAsyncError, (void*, int*))

#define STANDIN_NCCL(name)                                                           \
  extern "C" int p##name() { return t_depth > 0 ? 0 : standin::StatusFromEnv("STANDIN_NCCL_STATUS"); } \
  STANDIN_NCCL_ALIAS(name, ())
STANDIN_NCCL(ncclAllReduce)
STANDIN_NCCL(ncclAllGather)
STANDIN_NCCL(ncclReduceScatter)
STANDIN_NCCL(ncclBroadcast)
STANDIN_NCCL(ncclBcast)
STANDIN_NCCL(ncclReduce)
STANDIN_NCCL(ncclAlltoAll)
STANDIN_NCCL(ncclGather)
STANDIN_NCCL(ncclScatter)
STANDIN_NCCL(ncclSend)
STANDIN_NCCL(ncclRecv)
