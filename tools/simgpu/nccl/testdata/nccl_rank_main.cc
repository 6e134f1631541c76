// nccl_rank_main SCENARIO DIR: one rank of a multi-process NCCL test, started by simrun (RANK, WORLD_SIZE,
// LOCAL_RANK). Each rank computes every rank's inputs, so it checks its own results against the reference
// without talking to the others; results that must agree across ranks go to DIR as digests for the test.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/testdata/rank_env.h"
#include "tools/simgpu/nccl/testdata/reference.h"

namespace simgpu::nccl::testing {
namespace {

enum class Kind { kAllReduce, kReduce, kReduceScatter, kAllGather, kBroadcast };
const char* KindName(Kind k) {
  static const char* names[] = {"allreduce", "reduce", "reducescatter", "allgather", "broadcast"};
  return names[static_cast<int>(k)];
}

constexpr ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,    ncclUint32,     ncclInt64,
                                     ncclUint64,  ncclFloat16, ncclFloat32,  ncclFloat64,    ncclBfloat16,
                                     ncclFloat8e4m3, ncclFloat8e5m2};
// kPreMulSum stands for a ncclRedOpCreatePreMulSum operator whose scalar differs per rank.
constexpr ncclRedOp_t kPreMulSum = ncclNumOps;
constexpr ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, kPreMulSum};

// Rank r's PreMulSum scalar, as a double and as stored in the type.
double Scalar(ncclDataType_t t, int r) {
  const bool integer = t == ncclInt8 || t == ncclUint8 || t == ncclInt32 || t == ncclUint32 || t == ncclInt64 ||
                       t == ncclUint64;
  return integer ? r + 2 : 0.7 + 0.29 * r;
}
constexpr size_t kCounts[] = {1, 3, 777, 2601};  // most not divisible by the rank counts tested

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

// Reports the first element where `got` differs from `want`.
void Compare(const RankEnv& env, const std::string& what, const std::vector<uint8_t>& got,
             const std::vector<uint8_t>& want, size_t es) {
  if (got.size() != want.size()) return Fail(env, "%s: size %zu, want %zu", what.c_str(), got.size(), want.size());
  for (size_t i = 0; i < got.size(); i += es) {
    if (std::memcmp(&got[i], &want[i], es) != 0) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, &got[i], es);
      std::memcpy(&w, &want[i], es);
      return Fail(env, "%s: element %zu is 0x%" PRIx64 ", want 0x%" PRIx64, what.c_str(), i / es, g, w);
    }
  }
}

void CheckReduction(const RankEnv& env, ncclComm_t comm, cudaStream_t s, Kind kind, ncclDataType_t t,
                    ncclRedOp_t op, bool in_place, size_t count, int root, uint64_t seed) {
  const int n = env.world, me = env.rank;
  const size_t es = ElementSize(t);
  const size_t in_count = kind == Kind::kReduceScatter ? count * n : count;
  const bool premul = op == kPreMulSum;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < n; ++r) inputs.push_back(MakeInput(t, premul ? ncclSum : op, seed, r, in_count));
  const size_t offset = kind == Kind::kReduceScatter ? me * count : 0;
  const RefColl coll = kind == Kind::kAllReduce ? RefColl::kAllReduce
                       : kind == Kind::kReduce  ? RefColl::kReduce
                                                : RefColl::kReduceScatter;
  std::vector<double> scalars;
  if (premul) {
    for (int r = 0; r < n; ++r) scalars.push_back(LoadValue(t, StoreValue(t, Scalar(t, r)).data()));
  }
  const std::vector<uint8_t> want =
      ReferenceReduce(t, op, inputs, offset, count, ReferenceChains(coll, n, count, es, me, root), scalars);
  // A host scalar is copied when the operator is made, a device scalar read when the collective runs.
  const bool device_scalar = seed % 2 == 1;
  void* scalar = premul ? DeviceCopy(StoreValue(t, device_scalar ? 0 : Scalar(t, me))) : nullptr;
  if (premul) {
    if (ncclRedOpCreatePreMulSum(&op, scalar, t, device_scalar ? ncclScalarDevice : ncclScalarHostImmediate,
                                 comm) != ncclSuccess) {
      return Fail(env, "ncclRedOpCreatePreMulSum: %s", ncclGetLastError(comm));
    }
    std::vector<uint8_t> value = StoreValue(t, Scalar(t, me));
    std::memcpy(scalar, value.data(), value.size());
  }
  const std::string what = std::string(KindName(kind)) + "." + TypeName(t) + "." +
                           (premul ? (device_scalar ? "premulsum_device" : "premulsum_host") : OpName(op)) +
                           (in_place ? ".inplace" : ".outofplace") + ".count" + std::to_string(count) +
                           ".root" + std::to_string(root);

  auto* send = static_cast<uint8_t*>(DeviceCopy(inputs[me]));
  uint8_t* recv = nullptr;
  const bool writes = kind != Kind::kReduce || me == root;
  if (in_place) {
    recv = send + offset * es;
  } else if (writes || seed % 2 == 0) {
    recv = static_cast<uint8_t*>(DeviceFilled(count * es, 0xa5));
  }
  ncclResult_t r = kind == Kind::kAllReduce ? ncclAllReduce(send, recv, count, t, op, comm, s)
                   : kind == Kind::kReduce  ? ncclReduce(send, recv, count, t, op, root, comm, s)
                                            : ncclReduceScatter(send, recv, count, t, op, comm, s);
  if (r != ncclSuccess) return Fail(env, "%s: returned %s", what.c_str(), ncclGetErrorString(r));
  Sync(s);
  if (writes) {
    std::vector<uint8_t> got = HostCopy(recv, count * es);
    Compare(env, what, got, want, es);
    if (kind == Kind::kAllReduce) AppendLine(env, "digest", what + " " + Hex(Digest(got.data(), got.size())));
  } else if (recv != nullptr && !in_place) {
    Compare(env, what + " (non-root recvbuff must stay untouched)", HostCopy(recv, count * es),
            std::vector<uint8_t>(count * es, 0xa5), es);
  }
  if (!in_place || !writes) {
    Compare(env, what + " (sendbuff must stay unchanged)", HostCopy(send, in_count * es), inputs[me], es);
  }
  if (!in_place && recv != nullptr) FreeDevice(recv);
  FreeDevice(send);
  if (premul) {
    if (ncclRedOpDestroy(op, comm) != ncclSuccess) Fail(env, "%s: ncclRedOpDestroy failed", what.c_str());
    FreeDevice(scalar);
  }
}

void CheckMovement(const RankEnv& env, ncclComm_t comm, cudaStream_t s, Kind kind, ncclDataType_t t,
                   bool in_place, size_t count, int root, uint64_t seed) {
  const int n = env.world, me = env.rank;
  const size_t es = ElementSize(t);
  const std::string what = std::string(KindName(kind)) + "." + TypeName(t) +
                           (in_place ? ".inplace" : ".outofplace") + ".count" + std::to_string(count) +
                           ".root" + std::to_string(root);
  std::vector<uint8_t> want;
  uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
  ncclResult_t r;
  if (kind == Kind::kAllGather) {
    std::vector<uint8_t> mine;
    for (int rank = 0; rank < n; ++rank) {
      std::vector<uint8_t> in = MakeInput(t, ncclSum, seed, rank, count);
      want.insert(want.end(), in.begin(), in.end());
      if (rank == me) mine = in;
    }
    recv = static_cast<uint8_t*>(DeviceFilled(n * count * es, 0x5a));
    if (in_place) {
      send = recv + me * count * es;
      std::memcpy(send, mine.data(), mine.size());
    } else {
      send = static_cast<uint8_t*>(DeviceCopy(mine));
    }
    r = ncclAllGather(send, recv, count, t, comm, s);
  } else {
    want = MakeInput(t, ncclSum, seed, root, count);
    if (in_place) {
      recv = static_cast<uint8_t*>(me == root ? DeviceCopy(want) : DeviceFilled(count * es, 0x5a));
      send = recv;
      r = seed % 2 ? ncclBcast(recv, count, t, root, comm, s) : ncclBroadcast(send, recv, count, t, root, comm, s);
    } else {
      if (me == root) send = static_cast<uint8_t*>(DeviceCopy(want));
      recv = static_cast<uint8_t*>(DeviceFilled(count * es, 0x5a));
      r = ncclBroadcast(send, recv, count, t, root, comm, s);
    }
  }
  if (r != ncclSuccess) return Fail(env, "%s: returned %s", what.c_str(), ncclGetErrorString(r));
  Sync(s);
  std::vector<uint8_t> got = HostCopy(recv, want.size());
  Compare(env, what, got, want, es);
  AppendLine(env, "digest", what + " " + Hex(Digest(got.data(), got.size())));
  if (!in_place && send != nullptr) FreeDevice(send);
  FreeDevice(recv);
}

}  // namespace

int RunCollectives(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "coll");
  cudaStream_t s = NewStream();
  uint64_t c = 0;
  for (Kind kind : {Kind::kAllReduce, Kind::kReduce, Kind::kReduceScatter}) {
    for (ncclDataType_t t : kTypes) {
      for (ncclRedOp_t op : kOps) {
        for (bool in_place : {false, true}) {
          CheckReduction(env, comm, s, kind, t, op, in_place, kCounts[c % 4], static_cast<int>(c % env.world), c);
          ++c;
        }
      }
    }
  }
  for (Kind kind : {Kind::kAllGather, Kind::kBroadcast}) {
    for (ncclDataType_t t : kTypes) {
      for (bool in_place : {false, true}) {
        CheckMovement(env, comm, s, kind, t, in_place, kCounts[c % 4], static_cast<int>(c % env.world), c);
        ++c;
      }
    }
  }
  if (ncclCommDestroy(comm) != ncclSuccess) Fail(env, "ncclCommDestroy failed");
  return Failures() == 0 ? 0 : 1;
}

int RunLarge(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "large");
  cudaStream_t s = NewStream();
  const size_t count = size_t{4} << 20;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < env.world; ++r) inputs.push_back(MakeInput(ncclFloat32, ncclSum, 7, r, count));
  void* buf = DeviceCopy(inputs[env.rank]);
  double start = Seconds();
  if (ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, s) != ncclSuccess) Fail(env, "ncclAllReduce");
  Sync(s);
  double elapsed = Seconds() - start;
  std::vector<uint8_t> got = HostCopy(buf, count * 4);
  Compare(env, "large allreduce", got,
          ReferenceReduce(ncclFloat32, ncclSum, inputs, 0, count,
                          ReferenceChains(RefColl::kAllReduce, env.world, count, 4, env.rank, 0)),
          4);
  AppendLine(env, "digest", "large " + Hex(Digest(got.data(), got.size())));
  AppendLine(env, "timing", "allreduce_16MiB_s " + std::to_string(elapsed));
  FreeDevice(buf);
  ncclCommDestroy(comm);
  return Failures() == 0 ? 0 : 1;
}

}  // namespace simgpu::nccl::testing

int main(int argc, char** argv) {
  using namespace simgpu::nccl::testing;
  if (argc != 3 || std::getenv("RANK") == nullptr || std::getenv("WORLD_SIZE") == nullptr) {
    std::fprintf(stderr, "usage: RANK=r WORLD_SIZE=n LOCAL_RANK=l nccl_rank_main SCENARIO DIR (start with simrun)\n");
    return 2;
  }
  RankEnv env;
  env.rank = std::atoi(std::getenv("RANK"));
  env.world = std::atoi(std::getenv("WORLD_SIZE"));
  env.local_rank = std::getenv("LOCAL_RANK") != nullptr ? std::atoi(std::getenv("LOCAL_RANK")) : env.rank;
  env.dir = argv[2];
  const std::string scenario = argv[1];
  if (scenario != "duplicate_device") simgpu::SetCurrentDevice(env.local_rank);
  struct {
    const char* name;
    int (*run)(const RankEnv&);
  } scenarios[] = {
      {"collectives", RunCollectives}, {"sendrecv", RunSendRecv},       {"large", RunLarge},
      {"fault", RunFault},             {"init_timeout", RunInitTimeout}, {"op_timeout", RunOpTimeout},
      {"peer_exit", RunPeerExit},      {"mismatch", RunMismatch},        {"duplicate_device", RunDuplicateDevice},
      {"graph", RunGraph},
  };
  for (const auto& s : scenarios) {
    if (scenario == s.name) return s.run(env);
  }
  std::fprintf(stderr, "nccl_rank_main: unknown scenario %s\n", scenario.c_str());
  return 2;
}
