// What the small workloads (tp_mlp, moe_ep, fsdp_mlp) share and a training program has in some form of its own:
// error checks that end the process with the failed call's text, the launcher's environment, a file rendezvous for
// NCCL unique ids, a device matrix with a host FP32 master copy (BF16 on the device when asked), counter-based random
// numbers drawn by global index, a row-major GEMM on cuBLAS, and an FNV-1a hash for comparing final weights bit for
// bit. Header-only, everything in an anonymous namespace: each workload is one translation unit, built against the
// real CUDA headers like a user's program.
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

// Reads argv as "--name value" pairs: `on(name, value)` takes each and returns false for a name it does not know;
// then, or when a value is missing, `usage` is printed and the process exits with status 2.
template <typename OnFlag>
void ParseFlags(int argc, char** argv, const char* usage, OnFlag on) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc || !on(std::string(argv[i]), std::string(argv[i + 1]))) {
      fprintf(stderr, "%s", usage);
      exit(2);
    }
  }
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

// A rank's device (LOCAL_RANK), one stream, a cuBLAS handle on it and the NCCL communicator of all W ranks (its
// unique id shared through `rdzv`).
struct World {
  cudaStream_t s;
  cublasHandle_t cb;
  ncclComm_t comm;
};
inline World OpenWorld(const std::string& rdzv, int rank, int w) {
  World x;
  CHECK_CUDA(cudaSetDevice(EnvInt("LOCAL_RANK", 0)));
  CHECK_CUDA(cudaStreamCreate(&x.s));
  CHECK_CUBLAS(cublasCreate(&x.cb));
  CHECK_CUBLAS(cublasSetStream(x.cb, x.s));
  ncclUniqueId id = Rendezvous(rdzv, "world", rank == 0);
  CHECK_NCCL(ncclCommInitRank(&x.comm, w, id, rank));
  return x;
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

// Counter-based random: value of stream `s` at index `i`, uniform in [-1, 1).
inline float Hash01(uint64_t s, uint64_t i) {
  uint64_t z = s * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / 8388608.0f - 1.0f;
}

// Row-major Y = op(A)·op(B) via column-major cuBLAS on the same buffers (cublasGemmEx, FP32 compute).
inline void MatMul(cublasHandle_t h, bool ta, bool tb, const Tensor& a, const Tensor& b, Tensor& y,
                   float beta = 0.f) {
  const int k = ta ? a.rows : a.cols;
  const float one = 1.0f;
  const cudaDataType t = y.bf16 ? CUDA_R_16BF : CUDA_R_32F;
  CHECK_CUBLAS(cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, y.cols, y.rows, k,
                            &one, b.dev, t, b.cols, a.dev, t, a.cols, &beta, y.dev, t, y.cols, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}
inline ncclDataType_t Nt(const Tensor& t) { return t.bf16 ? ncclBfloat16 : ncclFloat32; }

inline uint64_t Fnv(const std::vector<float>& v, uint64_t h = 1469598103934665603ull) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

#endif  // TTRACE_TOOLS_WORKLOADS_WORKLOAD_UTIL_H_
