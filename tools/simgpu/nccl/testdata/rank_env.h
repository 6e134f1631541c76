// Shared helpers of the multi-process NCCL test program (nccl_rank_main): the rank's identity from simrun's
// environment, the ncclUniqueId exchange through a file, device buffers and failure reporting. The program
// reports every failed check on stderr and exits non-zero; it never uses gtest.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_RANK_ENV_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_RANK_ENV_H_

#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace simgpu::nccl::testing {

struct RankEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  std::string dir;  // scratch directory shared by the ranks (argv[2])
};

// Counts failed checks; printed with the rank as they happen.
void Fail(const RankEnv& env, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
int Failures();

// Rank 0 makes the id and publishes it as DIR/id.TAG (written to a temporary name, then renamed); the other
// ranks wait for the file. Exits the process when the id does not arrive within 60 s.
ncclUniqueId ExchangeId(const RankEnv& env, const std::string& tag);

// ncclCommInitRank on the exchanged id; exits the process on failure.
ncclComm_t InitComm(const RankEnv& env, const std::string& tag);

cudaStream_t NewStream();
void Sync(cudaStream_t stream);

// A device allocation holding a copy of `bytes` (or `size` bytes of `fill`).
void* DeviceCopy(const std::vector<uint8_t>& bytes);
void* DeviceFilled(size_t size, uint8_t fill);
std::vector<uint8_t> HostCopy(const void* device, size_t size);
void FreeDevice(void* p);

// Appends a line to DIR/<name>.<rank>.
void AppendLine(const RankEnv& env, const std::string& name, const std::string& line);

double Seconds();  // monotonic clock

// Scenarios (nccl_rank_main SCENARIO DIR); each returns the process exit status.
int RunCollectives(const RankEnv& env);    // every collective x dtype x op x placement vs. the reference
int RunSendRecv(const RankEnv& env);       // grouped rings with messages larger than the ring, self, ungrouped
int RunLarge(const RankEnv& env);          // one 16 MiB all-reduce with the default chunk size, timed
int RunFault(const RankEnv& env);          // mixed calls; writes every element that differs from the reference,
                                           // and the raw results and inputs
int RunInitTimeout(const RankEnv& env);    // the last rank never joins
int RunOpTimeout(const RankEnv& env);      // the last rank joins but never calls the all-reduce
int RunPeerExit(const RankEnv& env);       // the last rank exits right after joining
int RunMismatch(const RankEnv& env);       // rank 0 passes a different count
int RunDuplicateDevice(const RankEnv& env);  // every rank stays on device 0
int RunGraph(const RankEnv& env);          // an all-reduce and a send/recv ring captured into a graph, launched
                                           // several times between uncaptured all-reduces (rank_graph.cc)

}  // namespace simgpu::nccl::testing

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_RANK_ENV_H_
