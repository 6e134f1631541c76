// Scenarios where something goes wrong on purpose: injected collective faults (the rank reports every element
// that differs from the clean reference, and the test decides whether exactly the chosen one did), peers that
// never arrive or die, and calls that do not match across ranks. Outcomes go to DIR/result.RANK as key=value.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "tools/simgpu/nccl/testdata/rank_env.h"
#include "tools/simgpu/nccl/testdata/reference.h"

namespace simgpu::nccl::testing {
namespace {

std::vector<uint8_t> Floats(uint64_t seed, int rank, size_t count) {
  return MakeInput(ncclFloat32, ncclSum, seed, rank, count);
}

// Appends one "diffs" line per element of `got` that differs from `want`.
void RecordDiffs(const RankEnv& env, const std::string& call, const void* got, const std::vector<uint8_t>& want) {
  const auto* g = static_cast<const uint8_t*>(got);
  for (size_t i = 0; i < want.size(); i += 4) {
    uint32_t a, b;
    std::memcpy(&a, g + i, 4);
    std::memcpy(&b, &want[i], 4);
    if (a != b) {
      char line[96];
      std::snprintf(line, sizeof line, "%s elem=%zu xor=%" PRIx32, call.c_str(), i / 4, a ^ b);
      AppendLine(env, "diffs", line);
    }
  }
}

void WriteResult(const RankEnv& env, const std::string& line) { AppendLine(env, "result", line); }

void WriteBytes(const RankEnv& env, const std::string& name, const void* data, size_t bytes) {
  std::ofstream(env.dir + "/" + name, std::ios::binary).write(static_cast<const char*>(data), bytes);
}

std::string Outcome(ncclResult_t r, double seconds) {
  return "code=" + std::to_string(static_cast<int>(r)) + " seconds=" + std::to_string(seconds) +
         " error=" + ncclGetLastError(nullptr);
}

bool WaitForFile(const std::string& path, double timeout_s) {
  double start = Seconds();
  while (Seconds() - start < timeout_s) {
    if (std::ifstream(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int RunFault(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "fault");
  cudaStream_t s = NewStream();
  const int n = env.world, me = env.rank;
  std::vector<std::vector<uint8_t>> in_ag, in_ar, in_rs, in_ar2, in_red;
  for (int r = 0; r < n; ++r) {
    in_ag.push_back(Floats(10, r, 16));
    in_ar.push_back(Floats(12, r, 64));
    in_rs.push_back(Floats(13, r, 16 * n));
    in_ar2.push_back(Floats(14, r, 64));
    in_red.push_back(Floats(15, r, 64));
  }
  std::vector<uint8_t> bcast = Floats(11, 1 % n, 64);
  // call 0: AllGather
  void* ag_send = DeviceCopy(in_ag[me]);
  void* ag_recv = DeviceFilled(16 * n * 4, 0);
  ncclAllGather(ag_send, ag_recv, 16, ncclFloat32, comm, s);
  // not a collective: a send/receive ring
  std::vector<uint8_t> p2p_mine = Floats(16, me, 32);
  void* p2p_send = DeviceCopy(p2p_mine);
  void* p2p_recv = DeviceFilled(32 * 4, 0);
  ncclGroupStart();
  ncclSend(p2p_send, 32, ncclFloat32, (me + 1) % n, comm, s);
  ncclRecv(p2p_recv, 32, ncclFloat32, (me + n - 1) % n, comm, s);
  ncclGroupEnd();
  // call 1: Broadcast from rank 1; call 2: AllReduce; call 3: ReduceScatter; call 4: in-place AllReduce;
  // call 5: Reduce to rank 0.
  void* bc = me == 1 % n ? DeviceCopy(bcast) : DeviceFilled(64 * 4, 0);
  ncclBroadcast(bc, bc, 64, ncclFloat32, 1 % n, comm, s);
  void* ar_send = DeviceCopy(in_ar[me]);
  void* ar_recv = DeviceFilled(64 * 4, 0);
  ncclAllReduce(ar_send, ar_recv, 64, ncclFloat32, ncclSum, comm, s);
  void* rs_send = DeviceCopy(in_rs[me]);
  void* rs_recv = DeviceFilled(16 * 4, 0);
  ncclReduceScatter(rs_send, rs_recv, 16, ncclFloat32, ncclSum, comm, s);
  void* ar2 = DeviceCopy(in_ar2[me]);
  ncclAllReduce(ar2, ar2, 64, ncclFloat32, ncclSum, comm, s);
  void* red_send = DeviceCopy(in_red[me]);
  void* red_recv = me == 0 ? DeviceFilled(64 * 4, 0) : nullptr;
  ncclReduce(red_send, red_recv, 64, ncclFloat32, ncclSum, 0, comm, s);
  // call 6: an int32 all-reduce, whose sums do not depend on the order.
  std::vector<std::vector<uint8_t>> in_int;
  for (int r = 0; r < n; ++r) in_int.push_back(MakeInput(ncclInt32, ncclSum, 17, r, 10));
  void* int_buf = DeviceCopy(in_int[me]);
  ncclAllReduce(int_buf, int_buf, 10, ncclInt32, ncclSum, comm, s);
  Sync(s);

  // Raw results (res.RANK.CALL) and, from rank 0, every rank's inputs of the reductions (in.CALL.RANK), for
  // tests that compare a faulted run with a clean one.
  const std::string tag = "res." + std::to_string(me) + ".";
  WriteBytes(env, tag + "0", ag_recv, 16 * n * 4);
  WriteBytes(env, tag + "1", bc, 64 * 4);
  WriteBytes(env, tag + "2", ar_recv, 64 * 4);
  WriteBytes(env, tag + "3", rs_recv, 16 * 4);
  WriteBytes(env, tag + "4", ar2, 64 * 4);
  if (me == 0) WriteBytes(env, tag + "5", red_recv, 64 * 4);
  WriteBytes(env, tag + "6", int_buf, 10 * 4);
  for (int r = 0; me == 0 && r < n; ++r) {
    const std::string suffix = "." + std::to_string(r);
    WriteBytes(env, "in.2" + suffix, in_ar[r].data(), in_ar[r].size());
    WriteBytes(env, "in.3" + suffix, in_rs[r].data(), in_rs[r].size());
    WriteBytes(env, "in.5" + suffix, in_red[r].data(), in_red[r].size());
    WriteBytes(env, "in.6" + suffix, in_int[r].data(), in_int[r].size());
  }

  std::vector<uint8_t> ag_want;
  for (int r = 0; r < n; ++r) ag_want.insert(ag_want.end(), in_ag[r].begin(), in_ag[r].end());
  RecordDiffs(env, "call=0", ag_recv, ag_want);
  RecordDiffs(env, "p2p", p2p_recv, Floats(16, (me + n - 1) % n, 32));
  RecordDiffs(env, "call=1", bc, bcast);
  auto chains = [&](RefColl coll, size_t count) { return ReferenceChains(coll, n, count, 4, me, 0); };
  const auto all = chains(RefColl::kAllReduce, 64);
  RecordDiffs(env, "call=2", ar_recv, ReferenceReduce(ncclFloat32, ncclSum, in_ar, 0, 64, all));
  RecordDiffs(env, "call=3", rs_recv,
              ReferenceReduce(ncclFloat32, ncclSum, in_rs, me * 16, 16, chains(RefColl::kReduceScatter, 16)));
  RecordDiffs(env, "call=4", ar2, ReferenceReduce(ncclFloat32, ncclSum, in_ar2, 0, 64, all));
  RecordDiffs(env, "call=6", int_buf,
              ReferenceReduce(ncclInt32, ncclSum, in_int, 0, 10, chains(RefColl::kAllReduce, 10)));
  if (me == 0) {
    RecordDiffs(env, "call=5", red_recv,
                ReferenceReduce(ncclFloat32, ncclSum, in_red, 0, 64, chains(RefColl::kReduce, 64)));
  }
  ncclCommDestroy(comm);
  return 0;
}

int RunInitTimeout(const RankEnv& env) {
  if (env.rank == env.world - 1) {
    ExchangeId(env, "init");  // gets the id, never joins
    return 0;
  }
  ncclUniqueId id = ExchangeId(env, "init");
  if (env.rank == 0) {
    std::string name(id.internal + 8);
    WriteResult(env, "shm=" + name);
  }
  ncclComm_t comm = nullptr;
  double start = Seconds();
  ncclResult_t r = ncclCommInitRank(&comm, env.world, id, env.rank);
  WriteResult(env, Outcome(r, Seconds() - start));
  if (comm != nullptr) Fail(env, "comm is not NULL after a failed init");
  return r == ncclSuccess ? 1 : 0;
}

int RunOpTimeout(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "op");
  cudaStream_t s = NewStream();
  if (env.rank == env.world - 1) {
    // Alive but absent: waits until the other ranks have given up, then leaves.
    for (int r = 0; r + 1 < env.world; ++r) {
      WaitForFile(env.dir + "/result." + std::to_string(r), 60);
    }
    ncclCommDestroy(comm);
    return 0;
  }
  void* buf = DeviceFilled(1024 * 4, 0);
  double start = Seconds();
  ncclResult_t issued = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s);
  Sync(s);
  double seconds = Seconds() - start;
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  std::string error = ncclGetLastError(comm);
  ncclResult_t next = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s);
  WriteResult(env, "issued=" + std::to_string(issued) + " next=" + std::to_string(next) + " " +
                       "async=" + std::to_string(async) + " seconds=" + std::to_string(seconds) + " error=" + error);
  ncclCommDestroy(comm);
  return 0;
}

int RunPeerExit(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "exit");
  cudaStream_t s = NewStream();
  if (env.rank == env.world - 1) _exit(0);
  void* buf = DeviceFilled(1024 * 4, 0);
  double start = Seconds();
  ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s);
  Sync(s);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  WriteResult(env, Outcome(async, Seconds() - start));
  ncclCommAbort(comm);
  return 0;
}

int RunMismatch(const RankEnv& env) {
  ncclComm_t comm = InitComm(env, "mismatch");
  cudaStream_t s = NewStream();
  void* buf = DeviceFilled(16 * 4, 0);
  double start = Seconds();
  ncclAllReduce(buf, buf, env.rank == 0 ? 8 : 9, ncclFloat32, ncclSum, comm, s);
  Sync(s);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  WriteResult(env, Outcome(async, Seconds() - start));
  ncclCommDestroy(comm);
  return 0;
}

int RunDuplicateDevice(const RankEnv& env) {
  ncclUniqueId id = ExchangeId(env, "dup");
  ncclComm_t comm = nullptr;
  double start = Seconds();
  ncclResult_t r = ncclCommInitRank(&comm, env.world, id, env.rank);
  WriteResult(env, Outcome(r, Seconds() - start));
  return 0;
}

}  // namespace simgpu::nccl::testing
