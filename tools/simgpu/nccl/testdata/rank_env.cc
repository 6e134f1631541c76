#include "tools/simgpu/nccl/testdata/rank_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "tools/simgpu/core/simgpu.h"

namespace simgpu::nccl::testing {
namespace {

int g_failures = 0;

}  // namespace

void Fail(const RankEnv& env, const char* fmt, ...) {
  ++g_failures;
  if (g_failures > 50) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "rank %d: FAIL: %s\n", env.rank, msg);
}

int Failures() { return g_failures; }

ncclUniqueId ExchangeId(const RankEnv& env, const std::string& tag) {
  ncclUniqueId id;
  const std::string path = env.dir + "/id." + tag;
  if (env.rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      std::fprintf(stderr, "rank 0: ncclGetUniqueId failed\n");
      std::exit(1);
    }
    std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename(tmp.c_str(), path.c_str());
    return id;
  }
  double start = Seconds();
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id.internal, sizeof id.internal)) return id;
    if (Seconds() - start > 60) {
      std::fprintf(stderr, "rank %d: no unique id at %s after 60 s\n", env.rank, path.c_str());
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

ncclComm_t InitComm(const RankEnv& env, const std::string& tag) {
  ncclUniqueId id = ExchangeId(env, tag);
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, env.world, id, env.rank);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank: %s (%s)\n", env.rank, ncclGetErrorString(r),
                 ncclGetLastError(nullptr));
    std::exit(1);
  }
  return comm;
}

cudaStream_t NewStream() {
  return reinterpret_cast<cudaStream_t>(simgpu::CreateStream(cudaStreamNonBlocking, 0));
}

void Sync(cudaStream_t stream) { simgpu::SynchronizeStream(simgpu::ResolveStream(stream)); }

void* DeviceCopy(const std::vector<uint8_t>& bytes) {
  void* p = simgpu::AllocDevice(bytes.empty() ? 1 : bytes.size());
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  return p;
}

void* DeviceFilled(size_t size, uint8_t fill) {
  void* p = simgpu::AllocDevice(size == 0 ? 1 : size);
  std::memset(p, fill, size);
  return p;
}

std::vector<uint8_t> HostCopy(const void* device, size_t size) {
  const auto* p = static_cast<const uint8_t*>(device);
  return std::vector<uint8_t>(p, p + size);
}

void FreeDevice(void* p) { simgpu::FreeDevice(p); }

void AppendLine(const RankEnv& env, const std::string& name, const std::string& line) {
  std::ofstream(env.dir + "/" + name + "." + std::to_string(env.rank), std::ios::app) << line << "\n";
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace simgpu::nccl::testing
