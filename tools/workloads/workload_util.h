// What the small workloads (tp_mlp, moe_ep) share and a training program has in some form of its own: error checks
// that end the process with the failed call's text, the launcher's environment, a file rendezvous for NCCL unique
// ids, a device matrix with a host FP32 master copy (BF16 on the device when asked), and an FNV-1a hash for
// comparing final weights bit for bit. Header-only, everything in an anonymous namespace: each workload is one
// translation unit, built against the real CUDA headers like a user's program.
#ifndef TTRACE_TOOLS_WORKLOADS_WORKLOAD_UTIL_H_
#define TTRACE_TOOLS_WORKLOADS_WORKLOAD_UTIL_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"

namespace {

// "<program>: <call> failed: <why>" on stderr, exit status 1.
[[noreturn]] inline void Die(const char* what, const char* why) {
  fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name, what, why);
  exit(1);
}

#define CHECK_CUDA(x)                                                                                   \
  do {                                                                                                  \
    cudaError_t e_ = (x);                                                                               \
    if (e_ != cudaSuccess) Die(#x, cudaGetErrorString(e_));                                             \
  } while (0)
#define CHECK_CUBLAS(x)                                                                                 \
  do {                                                                                                  \
    cublasStatus_t s_ = (x);                                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) Die(#x, std::to_string(static_cast<int>(s_)).c_str());             \
  } while (0)
#define CHECK_NCCL(x)                                                                                   \
  do {                                                                                                  \
    ncclResult_t r_ = (x);                                                                              \
    if (r_ != ncclSuccess) Die(#x, ncclGetErrorString(r_));                                             \
  } while (0)

inline int EnvInt(const char* name, int dflt) {
  const char* v = getenv(name);
  return v ? atoi(v) : dflt;
}

// Shares an ncclUniqueId among the ranks of one group through a file: the group's first rank writes it.
inline ncclUniqueId Rendezvous(const std::string& dir, const std::string& name, bool creator) {
  ncclUniqueId id;
  std::string path = dir + "/" + name;
  if (creator) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    mkdir(dir.c_str(), 0777);
    std::string tmp = path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0) Die("rendezvous write", path.c_str());
    if (rename(tmp.c_str(), path.c_str()) != 0) Die("rendezvous rename", path.c_str());
    return id;
  }
  for (int i = 0; i < 60000; ++i) {
    FILE* f = fopen(path.c_str(), "rb");
    if (f) {
      size_t got = fread(&id, sizeof id, 1, f);
      fclose(f);
      if (got == 1) return id;
    }
    usleep(1000);
  }
  Die("rendezvous", ("timed out waiting for " + path).c_str());
}

// A device matrix (row-major rows x cols) in the run's GEMM dtype with a host FP32 copy (the master copy for
// weights). An empty one (an expert with no token) has a 16-byte device buffer and copies nothing.
struct Tensor {
  int rows = 0, cols = 0;
  std::vector<float> host;
  void* dev = nullptr;
  bool bf16 = false;
  size_t N() const { return static_cast<size_t>(rows) * cols; }
  size_t Bytes() const { return N() * (bf16 ? 2 : 4); }
};

inline Tensor Make(int rows, int cols, bool bf16) {
  Tensor t;
  t.rows = rows;
  t.cols = cols;
  t.bf16 = bf16;
  t.host.assign(t.N(), 0.0f);
  CHECK_CUDA(cudaMalloc(&t.dev, t.N() > 0 ? t.Bytes() : 16));
  return t;
}

// Host copy -> device (rounded to BF16 when the run is BF16), then waits for the stream.
inline void Upload(Tensor& t, cudaStream_t s) {
  if (t.N() == 0) return;
  std::vector<uint16_t> half;
  const void* src = t.host.data();
  if (t.bf16) {
    half.resize(t.N());
    for (size_t i = 0; i < half.size(); ++i) half[i] = simgpu::nv::FloatToBf16(t.host[i]);
    src = half.data();
  }
  CHECK_CUDA(cudaMemcpyAsync(t.dev, src, t.Bytes(), cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
}

// Waits for the stream, then device -> host copy.
inline void Download(Tensor& t, cudaStream_t s) {
  CHECK_CUDA(cudaStreamSynchronize(s));
  if (t.N() == 0) return;
  if (!t.bf16) {
    CHECK_CUDA(cudaMemcpy(t.host.data(), t.dev, t.Bytes(), cudaMemcpyDeviceToHost));
    return;
  }
  std::vector<uint16_t> half(t.N());
  CHECK_CUDA(cudaMemcpy(half.data(), t.dev, t.Bytes(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < half.size(); ++i) t.host[i] = simgpu::nv::Bf16ToFloat(half[i]);
}

inline uint64_t Fnv(const std::vector<float>& v, uint64_t h = 1469598103934665603ull) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

#endif  // TTRACE_TOOLS_WORKLOADS_WORKLOAD_UTIL_H_
