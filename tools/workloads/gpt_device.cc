#include "tools/workloads/gpt_device.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "tools/simgpu/common/nv_dtype.h"

namespace ttrace::workloads::gpt {
namespace {

void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(what, cudaGetErrorString(e));
}
void CheckBlas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) Die(what, "cuBLAS status " + std::to_string(static_cast<int>(s)));
}
void CheckNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) Die(what, ncclGetErrorString(r));
}

ncclDataType_t NcclType(const DevBuf& b) { return b.bf16() ? ncclBfloat16 : ncclFloat32; }

// Shares the world's ncclUniqueId through `dir`/world: rank 0 writes it (atomically, by rename), the others poll.
ncclUniqueId Rendezvous(const std::string& dir, bool creator) {
  ncclUniqueId id;
  const std::string path = dir + "/world";
  if (creator) {
    CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    mkdir(dir.c_str(), 0777);
    const std::string tmp = path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0) Die("rendezvous write", path);
    if (rename(tmp.c_str(), path.c_str()) != 0) Die("rendezvous rename", path);
    return id;
  }
  for (int i = 0; i < 60000; ++i) {
    if (FILE* f = fopen(path.c_str(), "rb")) {
      const size_t got = fread(&id, sizeof id, 1, f);
      fclose(f);
      if (got == 1) return id;
    }
    usleep(1000);
  }
  Die("rendezvous", "timed out waiting for " + path);
}

}  // namespace

void Die(const std::string& what, const std::string& why) {
  fprintf(stderr, "gpt: %s failed: %s\n", what.c_str(), why.c_str());
  exit(1);
}

float Round(float v, bool bf16) { return bf16 ? simgpu::nv::Bf16ToFloat(simgpu::nv::FloatToBf16(v)) : v; }

void RoundAll(std::vector<float>& v, bool bf16) {
  if (bf16)
    for (float& x : v) x = Round(x, true);
}

DevBuf::DevBuf(size_t size, bool bf16) : n_(size), bf16_(bf16) {
  CheckCuda(cudaMalloc(&p_, (size ? size : 1) * elem_bytes()), "cudaMalloc");
}
DevBuf::DevBuf(DevBuf&& o) noexcept { *this = std::move(o); }
DevBuf& DevBuf::operator=(DevBuf&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  std::swap(bf16_, o.bf16_);
  return *this;
}
DevBuf::~DevBuf() {
  if (p_) cudaFree(p_);
}
void* DevBuf::at(size_t elem) const { return static_cast<char*>(p_) + elem * elem_bytes(); }

Device::Device(int local_rank, bool bf16) : bf16_(bf16) {
  CheckCuda(cudaSetDevice(local_rank), "cudaSetDevice");
  CheckCuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
  CheckBlas(cublasCreate(&blas_), "cublasCreate");
  CheckBlas(cublasSetStream(blas_, stream_), "cublasSetStream");
}

Device::~Device() {
  cudaStreamSynchronize(stream_);
  cublasDestroy(blas_);
  cudaStreamDestroy(stream_);
}

DevBuf Device::Upload(const std::vector<float>& host, bool f32) const {
  DevBuf b = Alloc(host.size(), f32);
  UploadTo(host, b);
  return b;
}

void Device::UploadTo(const std::vector<float>& host, DevBuf& dst) const {
  if (host.size() != dst.size()) Die("upload", "size mismatch");
  // Synchronous on purpose: the host staging vector dies when this returns.
  if (!dst.bf16()) {
    CheckCuda(cudaMemcpyAsync(dst.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync");
  } else {
    std::vector<uint16_t> half(host.size());
    for (size_t i = 0; i < half.size(); ++i) half[i] = simgpu::nv::FloatToBf16(host[i]);
    CheckCuda(cudaMemcpyAsync(dst.data(), half.data(), half.size() * 2, cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync");
  }
  CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::vector<float> Device::Download(const DevBuf& b) const {
  CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  std::vector<float> out(b.size());
  if (!b.bf16()) {
    CheckCuda(cudaMemcpy(out.data(), b.data(), b.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return out;
  }
  std::vector<uint16_t> half(b.size());
  CheckCuda(cudaMemcpy(half.data(), b.data(), b.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (size_t i = 0; i < half.size(); ++i) out[i] = simgpu::nv::Bf16ToFloat(half[i]);
  return out;
}

void Device::Copy(const DevBuf& src, size_t src_off, DevBuf& dst, size_t dst_off, size_t n) const {
  CheckCuda(cudaMemcpyAsync(dst.at(dst_off), src.at(src_off), n * src.elem_bytes(), cudaMemcpyDeviceToDevice,
                            stream_),
            "cudaMemcpyAsync");
}

void Device::Gemm(bool ta, bool tb, int m, int n, int k, float alpha, const DevBuf& a, int lda, long long sa,
                  const DevBuf& b, int ldb, long long sb, DevBuf& c, int ldc, long long sc, int batch) const {
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ on the same buffers.
  const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType t = bf16_ ? CUDA_R_16BF : CUDA_R_32F;
  const float zero = 0.0f;
  if (batch == 1) {
    CheckBlas(cublasGemmEx(blas_, opb, opa, n, m, k, &alpha, b.data(), t, ldb, a.data(), t, lda, &zero, c.data(), t,
                           ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
    return;
  }
  CheckBlas(cublasGemmStridedBatchedEx(blas_, opb, opa, n, m, k, &alpha, b.data(), t, ldb, sb, a.data(), t, lda, sa,
                                       &zero, c.data(), t, ldc, sc, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx");
}

void Device::MatMul(bool ta, bool tb, int m, int n, int k, const DevBuf& a, const DevBuf& b, DevBuf& c) const {
  Gemm(ta, tb, m, n, k, 1.0f, a, ta ? m : k, 0, b, tb ? k : n, 0, c, n, 0, 1);
}

void Device::AllReduce(const Group& g, DevBuf& buf, ncclRedOp_t op) const {
  if (g.size == 1) return;
  CheckNccl(ncclAllReduce(buf.data(), buf.data(), buf.size(), NcclType(buf), op, g.comm, stream_), "ncclAllReduce");
}

void Device::AllGather(const Group& g, const DevBuf& in, DevBuf& out) const {
  if (out.size() != in.size() * g.size) Die("all-gather", "size mismatch");
  if (g.size == 1) return Copy(in, 0, out, 0, in.size());
  CheckNccl(ncclAllGather(in.data(), out.data(), in.size(), NcclType(in), g.comm, stream_), "ncclAllGather");
}

void Device::ReduceScatter(const Group& g, const DevBuf& in, DevBuf& out, ncclRedOp_t op) const {
  if (in.size() != out.size() * g.size) Die("reduce-scatter", "size mismatch");
  if (g.size == 1) return Copy(in, 0, out, 0, in.size());
  CheckNccl(ncclReduceScatter(in.data(), out.data(), out.size(), NcclType(in), op, g.comm, stream_),
            "ncclReduceScatter");
}

void Device::Send(const Group& g, const DevBuf& buf, int peer) const {
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  CheckNccl(ncclSend(buf.data(), buf.size(), NcclType(buf), peer, g.comm, stream_), "ncclSend");
  CheckNccl(ncclGroupEnd(), "ncclGroupEnd");
}

void Device::Recv(const Group& g, DevBuf& buf, int peer) const {
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  CheckNccl(ncclRecv(buf.data(), buf.size(), NcclType(buf), peer, g.comm, stream_), "ncclRecv");
  CheckNccl(ncclGroupEnd(), "ncclGroupEnd");
}

void Device::SendRecv(const Group& g, const DevBuf& out, int to, DevBuf& in, int from) const {
  CheckNccl(ncclGroupStart(), "ncclGroupStart");
  CheckNccl(ncclSend(out.data(), out.size(), NcclType(out), to, g.comm, stream_), "ncclSend");
  CheckNccl(ncclRecv(in.data(), in.size(), NcclType(in), from, g.comm, stream_), "ncclRecv");
  CheckNccl(ncclGroupEnd(), "ncclGroupEnd");
}

void Device::AllReduceHost(const Group& g, std::vector<float>& v, ncclRedOp_t op) const {
  if (g.size == 1) return;
  DevBuf b = Upload(v, /*f32=*/true);
  AllReduce(g, b, op);
  v = Download(b);
}

void Device::AllReduceStat(const Group& g, std::vector<float>& v, ncclRedOp_t op) const {
  DevBuf b = Upload(v, /*f32=*/true);
  CheckNccl(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, op, g.comm, stream_), "ncclAllReduce");
  v = Download(b);
}

Comms OpenComms(const std::string& rdzv, int rank, int world, const int color[4], const int key[4],
                bool rotated_gathers) {
  Comms c;
  const ncclUniqueId id = Rendezvous(rdzv, rank == 0);
  CheckNccl(ncclCommInitRank(&c.world.comm, world, id, rank), "ncclCommInitRank");
  // Every rank has joined once ncclCommInitRank returns, so the id file can go.
  if (rank == 0) {
    unlink((rdzv + "/world").c_str());
    rmdir(rdzv.c_str());
  }
  c.world.size = world;
  c.world.rank = rank;
  Group* groups[4] = {&c.tp, &c.dp, &c.pp, &c.mp};
  for (int i = 0; i < 4; ++i) {
    CheckNccl(ncclCommSplit(c.world.comm, color[i], key[i], &groups[i]->comm, nullptr), "ncclCommSplit");
    CheckNccl(ncclCommCount(groups[i]->comm, &groups[i]->size), "ncclCommCount");
    CheckNccl(ncclCommUserRank(groups[i]->comm, &groups[i]->rank), "ncclCommUserRank");
  }
  c.tp_gather = c.tp;
  c.dp_gather = c.dp;
  Group* gathers[2] = {&c.tp_gather, &c.dp_gather};
  for (int i = 0; i < 2 && rotated_gathers; ++i) {
    const int size = groups[i]->size, rotated = (key[i] + size - 1) % size;
    CheckNccl(ncclCommSplit(c.world.comm, color[i], rotated, &gathers[i]->comm, nullptr), "ncclCommSplit");
    gathers[i]->rank = rotated;
  }
  return c;
}

void CloseComms(Comms& c) {
  for (Group* g : {&c.tp_gather, &c.dp_gather})
    if (g->comm && g->comm != c.tp.comm && g->comm != c.dp.comm) CheckNccl(ncclCommDestroy(g->comm), "ncclCommDestroy");
  for (Group* g : {&c.tp, &c.dp, &c.pp, &c.mp, &c.world})
    if (g->comm) CheckNccl(ncclCommDestroy(g->comm), "ncclCommDestroy");
}

}  // namespace ttrace::workloads::gpt
