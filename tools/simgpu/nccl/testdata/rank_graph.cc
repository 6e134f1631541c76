// Graph scenario: an all-reduce and a grouped ring send/recv captured into one graph, launched kLaunches times
// back to back on one stream, with new inputs written on the stream before each launch and an uncaptured
// all-reduce on the same communicator and stream after each launch. Nothing synchronizes with the host between
// launches, so each launch must read its buffers when the stream reaches it, and the uncaptured calls (which
// take their place in the communicator's order on the host, before the launches ahead of them have run) must
// not deadlock with the replays. Results are copied on the stream after each launch and checked at the end.
// With SIMGPU_FAULT set (the test names call 1, the captured all-reduce, on rank 1), every launch's all-reduce
// on that rank must carry the fault and the uncaptured all-reduces none.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/testdata/rank_env.h"
#include "tools/simgpu/nccl/testdata/reference.h"

namespace simgpu::nccl::testing {
namespace {

constexpr int kLaunches = 3;
constexpr size_t kCount = 2601;  // spans several staging chunks and ring loops at the test's chunk sizes
constexpr size_t kRingCount = 3 * 4096 / 4 + 7;  // larger than the send/recv ring
constexpr size_t kFaultElem = 5;
constexpr float kFaultValue = 7.0f;

std::vector<uint8_t> Input(uint64_t seed, int rank, size_t count) {
  return MakeInput(ncclFloat32, ncclSum, seed, rank, count);
}

std::vector<uint8_t> AllReduceRef(const RankEnv& env, uint64_t seed) {
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < env.world; ++r) inputs.push_back(Input(seed, r, kCount));
  return ReferenceReduce(ncclFloat32, ncclSum, inputs, 0, kCount,
                         ReferenceChains(RefColl::kAllReduce, env.world, kCount, 4, env.rank, 0));
}

void Check(const RankEnv& env, const std::string& what, const std::vector<uint8_t>& got,
           const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return Fail(env, "%s: %zu bytes, want %zu", what.c_str(), got.size(), want.size());
  for (size_t i = 0; i < got.size(); i += 4) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    if (g != w) return Fail(env, "%s: element %zu is 0x%08x, want 0x%08x", what.c_str(), i / 4, g, w);
  }
}

std::string DigestHex(const std::vector<uint8_t>& v) {
  char b[24];
  std::snprintf(b, sizeof b, "%016" PRIx64, Digest(v.data(), v.size()));
  return b;
}

// Stream-ordered host work: writes `bytes` into dst, or copies n bytes of src into *out, when the stream gets
// there.
void EnqueueWrite(simgpu::Stream* s, void* dst, std::vector<uint8_t> bytes) {
  simgpu::Enqueue(s, [dst, bytes = std::move(bytes)] { std::memcpy(dst, bytes.data(), bytes.size()); });
}
void EnqueueRead(simgpu::Stream* s, const void* src, size_t n, std::vector<uint8_t>* out) {
  simgpu::Enqueue(s, [src, n, out] {
    const auto* p = static_cast<const uint8_t*>(src);
    out->assign(p, p + n);
  });
}

}  // namespace

int RunGraph(const RankEnv& env) {
  const bool faulted = std::getenv("SIMGPU_FAULT") != nullptr;
  const int n = env.world, me = env.rank, next = (me + 1) % n, prev = (me + n - 1) % n;
  ncclComm_t comm = InitComm(env, "graph");
  cudaStream_t cs = NewStream();
  simgpu::Stream* s = simgpu::ResolveStream(cs);
  void* send = DeviceFilled(kCount * 4, 0);
  void* recv = DeviceFilled(kCount * 4, 0);
  void* ring_send = DeviceFilled(kRingCount * 4, 0);
  void* ring_recv = DeviceFilled(kRingCount * 4, 0);
  void* eager = DeviceFilled(kCount * 4, 0);

  // Call 0: an uncaptured all-reduce before the capture.
  EnqueueWrite(s, eager, Input(50, me, kCount));
  if (ncclAllReduce(eager, eager, kCount, ncclFloat32, ncclSum, comm, cs) != ncclSuccess) Fail(env, "first eager");
  std::vector<uint8_t> first_eager;
  EnqueueRead(s, eager, kCount * 4, &first_eager);

  // Call 1 (numbered at capture): the captured all-reduce, then the captured ring.
  if (simgpu::BeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) Fail(env, "BeginCapture");
  bool ok = ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, cs) == ncclSuccess;
  ok &= ncclGroupStart() == ncclSuccess;
  ok &= ncclSend(ring_send, kRingCount, ncclFloat32, next, comm, cs) == ncclSuccess;
  ok &= ncclRecv(ring_recv, kRingCount, ncclFloat32, prev, comm, cs) == ncclSuccess;
  ok &= ncclGroupEnd() == ncclSuccess;
  if (!ok) Fail(env, "captured calls failed: %s", ncclGetLastError(comm));
  simgpu::Graph* graph = nullptr;
  if (simgpu::EndCapture(s, &graph) != cudaSuccess || graph == nullptr) {
    Fail(env, "EndCapture gave no graph");
    return 1;
  }
  if (simgpu::GraphNodes(graph).empty()) Fail(env, "the graph recorded no node");
  simgpu::GraphExec* exec = simgpu::InstantiateGraph(graph);

  std::vector<std::vector<uint8_t>> reduced(kLaunches), ringed(kLaunches), eagers(kLaunches);
  for (int k = 0; k < kLaunches; ++k) {
    EnqueueWrite(s, send, Input(100 + k, me, kCount));
    EnqueueWrite(s, ring_send, Input(200 + k * 8 + next, me, kRingCount));
    EnqueueWrite(s, recv, std::vector<uint8_t>(kCount * 4, 0xee));
    if (simgpu::LaunchGraph(exec, s) != cudaSuccess) Fail(env, "LaunchGraph %d", k);
    EnqueueRead(s, recv, kCount * 4, &reduced[k]);
    EnqueueRead(s, ring_recv, kRingCount * 4, &ringed[k]);
    EnqueueWrite(s, eager, Input(300 + k, me, kCount));
    if (ncclAllReduce(eager, eager, kCount, ncclFloat32, ncclSum, comm, cs) != ncclSuccess) Fail(env, "eager %d", k);
    EnqueueRead(s, eager, kCount * 4, &eagers[k]);
  }
  Sync(cs);

  Check(env, "uncaptured all-reduce before the capture", first_eager, AllReduceRef(env, 50));
  AppendLine(env, "digest", "eager_first " + DigestHex(first_eager));
  for (int k = 0; k < kLaunches; ++k) {
    const std::string launch = " (launch " + std::to_string(k) + ")";
    std::vector<uint8_t> want = AllReduceRef(env, 100 + k);
    if (faulted && me == 1) std::memcpy(&want[kFaultElem * 4], &kFaultValue, 4);
    Check(env, "captured all-reduce" + launch, reduced[k], want);
    Check(env, "captured ring receive" + launch, ringed[k], Input(200 + k * 8 + me, prev, kRingCount));
    Check(env, "uncaptured all-reduce" + launch, eagers[k], AllReduceRef(env, 300 + k));
    AppendLine(env, "digest", "captured" + launch + " " + DigestHex(reduced[k]));
    AppendLine(env, "digest", "eager" + launch + " " + DigestHex(eagers[k]));
  }
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  if (async != ncclSuccess) Fail(env, "asynchronous error %s: %s", ncclGetErrorString(async), ncclGetLastError(comm));
  simgpu::DestroyGraphExec(exec);
  simgpu::DestroyGraph(graph);
  for (void* p : {send, recv, ring_send, ring_recv, eager}) FreeDevice(p);
  if (ncclCommDestroy(comm) != ncclSuccess) Fail(env, "ncclCommDestroy failed");
  return Failures() == 0 ? 0 : 1;
}

}  // namespace simgpu::nccl::testing
