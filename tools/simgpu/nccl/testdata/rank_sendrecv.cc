// Send/receive scenario. Messages are several times larger than a ring (the test sets
// SIMGPU_NCCL_CHUNK_BYTES=4096), so the grouped exchange completes only if the ranks' sends and receives
// progress together; a rank that finished its sends before receiving would deadlock.
#include <cstring>
#include <string>

#include "tools/simgpu/nccl/testdata/rank_env.h"
#include "tools/simgpu/nccl/testdata/reference.h"

namespace simgpu::nccl::testing {
namespace {

struct Message {
  int tag;
  ncclDataType_t type;
  size_t count;
};

// The payload rank `src` sends to rank `dst` under `tag`.
std::vector<uint8_t> Payload(const Message& m, int src, int dst) {
  return MakeInput(m.type, ncclSum, 1000 + static_cast<uint64_t>(m.tag) * 64 + dst, src, m.count);
}

void Expect(const RankEnv& env, const char* what, const void* buf, const std::vector<uint8_t>& want) {
  if (std::memcmp(HostCopy(buf, want.size()).data(), want.data(), want.size()) != 0) {
    Fail(env, "%s: received data differs from what the peer sent", what);
  }
}

}  // namespace

int RunSendRecv(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "p2p");
  cudaStream_t s = NewStream();
  const int n = env.world, me = env.rank;
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t big = 5 * 4096 / 4 + 13;
  const Message a{0, ncclFloat32, big}, b{1, ncclInt8, 77}, c{2, ncclFloat32, big + 100}, d{3, ncclFloat64, 1000};

  // Two messages to the next rank (matched in order), one to the previous rank, one to self, plus an empty one.
  std::vector<void*> sends = {DeviceCopy(Payload(a, me, next)), DeviceCopy(Payload(b, me, next)),
                              DeviceCopy(Payload(c, me, prev)), DeviceCopy(Payload(d, me, me))};
  void* ra = DeviceFilled(a.count * 4, 0);
  void* rb = DeviceFilled(b.count, 0);
  void* rc = DeviceFilled(c.count * 4, 0);
  void* rd = DeviceFilled(d.count * 8, 0);
  bool ok = ncclGroupStart() == ncclSuccess;
  ok &= ncclRecv(ra, a.count, a.type, prev, comm, s) == ncclSuccess;
  ok &= ncclSend(sends[0], a.count, a.type, next, comm, s) == ncclSuccess;
  ok &= ncclSend(sends[1], b.count, b.type, next, comm, s) == ncclSuccess;
  ok &= ncclSend(sends[2], c.count, c.type, prev, comm, s) == ncclSuccess;
  ok &= ncclRecv(rb, b.count, b.type, prev, comm, s) == ncclSuccess;
  ok &= ncclSend(sends[3], d.count, d.type, me, comm, s) == ncclSuccess;
  ok &= ncclRecv(rc, c.count, c.type, next, comm, s) == ncclSuccess;
  ok &= ncclRecv(rd, d.count, d.type, me, comm, s) == ncclSuccess;
  ok &= ncclSend(sends[0], 0, ncclFloat32, next, comm, s) == ncclSuccess;
  ok &= ncclRecv(ra, 0, ncclFloat32, prev, comm, s) == ncclSuccess;
  ok &= ncclGroupEnd() == ncclSuccess;
  if (!ok) Fail(env, "grouped send/recv calls failed: %s", ncclGetLastError(comm));
  Sync(s);
  Expect(env, "ring message a", ra, Payload(a, prev, me));
  Expect(env, "ring message b", rb, Payload(b, prev, me));
  Expect(env, "ring message c (other direction)", rc, Payload(c, next, me));
  Expect(env, "message to self", rd, Payload(d, me, me));

  // Ungrouped: rank 0 sends a small message to every rank, then a message larger than the ring to rank 1.
  const Message e{4, ncclInt32, 10}, f{5, ncclUint8, 3 * 4096 + 5};
  if (me == 0) {
    std::vector<void*> fan;
    for (int peer = 1; peer < n; ++peer) {
      fan.push_back(DeviceCopy(Payload(e, 0, peer)));
      if (ncclSend(fan.back(), e.count, e.type, peer, comm, s) != ncclSuccess) Fail(env, "ncclSend to %d", peer);
    }
    void* large = DeviceCopy(Payload(f, 0, 1));
    if (ncclSend(large, f.count, f.type, 1, comm, s) != ncclSuccess) Fail(env, "ncclSend large");
    Sync(s);
    for (void* p : fan) FreeDevice(p);
    FreeDevice(large);
  } else {
    void* re = DeviceFilled(e.count * 4, 0);
    if (ncclRecv(re, e.count, e.type, 0, comm, s) != ncclSuccess) Fail(env, "ncclRecv from 0");
    void* rf = me == 1 ? DeviceFilled(f.count, 0) : nullptr;
    if (me == 1 && ncclRecv(rf, f.count, f.type, 0, comm, s) != ncclSuccess) Fail(env, "ncclRecv large");
    Sync(s);
    Expect(env, "ungrouped message", re, Payload(e, 0, me));
    if (me == 1) Expect(env, "ungrouped large message", rf, Payload(f, 0, 1));
  }
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  if (async != ncclSuccess) Fail(env, "asynchronous error %s: %s", ncclGetErrorString(async), ncclGetLastError(comm));
  ncclCommDestroy(comm);
  return Failures() == 0 ? 0 : 1;
}

}  // namespace simgpu::nccl::testing
