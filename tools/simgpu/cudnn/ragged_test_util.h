// Test helper: attention over packed variable-length sequences, as PyTorch's nested-tensor SDPA lays it out
// (run_cudnn_SDP_fprop_nestedtensor in aten/src/ATen/native/cudnn/MHA.cpp): Q, K, V and O are THD buffers (token,
// head, dim) described as [b, h, s_max, d] tensors with strides {INT_MAX, d, h * d, 1} and ragged offsets of
// cumulative sequence length * h * d elements; Stats is [b, h, s_max, 1] with strides {h * s_max, 1, h, 1} and
// ragged offsets of cumulative length * h (the element offsets NVIDIA's own tests use); sequence lengths are INT32
// [b, 1, 1, 1]. Builds the fused SDPA operation (cudnn-frontend's unified node) or the composite graph
// cudnn-frontend builds with a padding mask, and holds device buffers with guard elements after their end.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_RAGGED_TEST_UTIL_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_RAGGED_TEST_UTIL_H_

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/cudnn/backend_test_util.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {

// uids, after PyTorch's UIDS enum order where it has them.
enum RaggedUid : int64_t {
  kQ = 1, kK, kV, kO, kStats, kScale,
  kSeqQ = 11, kSeqKv,
  kRagQ = 20, kRagK, kRagV, kRagO, kRagStats,
  kLowest = 30,
};

struct RaggedCase {
  cudnnDataType_t io = CUDNN_DATA_BFLOAT16;
  cudnnDataType_t offsets = CUDNN_DATA_INT32;  // INT32 or INT64
  int64_t h = 4, hk = 2, d = 16;
  int64_t max_q = 20, max_kv = 24;                    // the tensors' s dimensions
  std::vector<int64_t> seq_q = {5, 17, 9}, seq_kv = {7, 24, 12};
  float scale = 0.25f;
  int64_t o_lead = 0;  // unused elements before O's first sequence (its offsets start there)
  int64_t b() const { return static_cast<int64_t>(seq_q.size()); }
  static std::vector<int64_t> Cumulative(const std::vector<int64_t>& lens) {
    std::vector<int64_t> c = {0};
    for (int64_t l : lens) c.push_back(c.back() + l);
    return c;
  }
  int64_t tokens_q() const { return Cumulative(seq_q).back(); }
  int64_t tokens_kv() const { return Cumulative(seq_kv).back(); }
};

constexpr size_t kGuard = 64;  // guard elements after each buffer

// A device buffer of `n` elements of `type` plus kGuard guard elements, every byte 0xA5 until written.
class Buffer {
 public:
  Buffer(cudnnDataType_t type, size_t n) : type_(type), n_(n), bytes_((n + kGuard) * Bytes(type), 0xA5) {
    cudaMalloc(&device_, bytes_.size());
    cudaMemcpy(device_, bytes_.data(), bytes_.size(), cudaMemcpyHostToDevice);
  }
  ~Buffer() { cudaFree(device_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* device() const { return device_; }
  size_t size() const { return n_; }
  // Element i as stored (after Download for outputs).
  double at(size_t i) const { return Decode(type_, &bytes_[i * Bytes(type_)]); }
  bool untouched(size_t i) const {
    for (size_t b = 0; b < Bytes(type_); ++b) {
      if (bytes_[i * Bytes(type_) + b] != 0xA5) return false;
    }
    return true;
  }
  bool guards_untouched() const {
    for (size_t i = n_; i < n_ + kGuard; ++i) {
      if (!untouched(i)) return false;
    }
    return true;
  }
  const std::vector<unsigned char>& bytes() const { return bytes_; }
  void Set(size_t i, double v) { Encode(v, type_, &bytes_[i * Bytes(type_)]); }
  void Fill(std::mt19937* rng) {
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    for (size_t i = 0; i < n_; ++i) Set(i, real(*rng));
  }
  void Upload() { cudaMemcpy(device_, bytes_.data(), bytes_.size(), cudaMemcpyHostToDevice); }
  void Download() {
    cudaDeviceSynchronize();
    cudaMemcpy(bytes_.data(), device_, bytes_.size(), cudaMemcpyDeviceToHost);
  }

 private:
  cudnnDataType_t type_;
  size_t n_;
  std::vector<unsigned char> bytes_;
  void* device_ = nullptr;
};

// Device inputs and outputs of one ragged attention problem.
struct RaggedData {
  explicit RaggedData(const RaggedCase& c, unsigned seed)
      : q(c.io, static_cast<size_t>(c.tokens_q() * c.h * c.d)),
        k(c.io, static_cast<size_t>(c.tokens_kv() * c.hk * c.d)),
        v(c.io, static_cast<size_t>(c.tokens_kv() * c.hk * c.d)),
        o(c.io, static_cast<size_t>(c.tokens_q() * c.h * c.d + c.o_lead)),
        stats(CUDNN_DATA_FLOAT, static_cast<size_t>(c.tokens_q() * c.h)),
        seq_q(CUDNN_DATA_INT32, static_cast<size_t>(c.b())),
        seq_kv(CUDNN_DATA_INT32, static_cast<size_t>(c.b())),
        rag_q(c.offsets, static_cast<size_t>(c.b() + 1)),
        rag_k(c.offsets, static_cast<size_t>(c.b() + 1)),
        rag_v(c.offsets, static_cast<size_t>(c.b() + 1)),
        rag_o(c.offsets, static_cast<size_t>(c.b() + 1)),
        rag_stats(c.offsets, static_cast<size_t>(c.b() + 1)) {
    std::mt19937 rng(seed);
    for (Buffer* t : {&q, &k, &v}) {
      t->Fill(&rng);
      t->Upload();
    }
    const std::vector<int64_t> cq = RaggedCase::Cumulative(c.seq_q), ckv = RaggedCase::Cumulative(c.seq_kv);
    for (size_t i = 0; i < cq.size(); ++i) {
      rag_q.Set(i, static_cast<double>(cq[i] * c.h * c.d));
      rag_o.Set(i, static_cast<double>(cq[i] * c.h * c.d + c.o_lead));
      rag_k.Set(i, static_cast<double>(ckv[i] * c.hk * c.d));
      rag_v.Set(i, static_cast<double>(ckv[i] * c.hk * c.d));
      rag_stats.Set(i, static_cast<double>(cq[i] * c.h));
    }
    for (size_t i = 0; i < c.seq_q.size(); ++i) {
      seq_q.Set(i, static_cast<double>(c.seq_q[i]));
      seq_kv.Set(i, static_cast<double>(c.seq_kv[i]));
    }
    for (Buffer* t : {&seq_q, &seq_kv, &rag_q, &rag_k, &rag_v, &rag_o, &rag_stats}) t->Upload();
  }
  std::map<int64_t, void*> Pack(float* scale, float* lowest, bool with_stats) const {
    std::map<int64_t, void*> p = {{kQ, q.device()},         {kK, k.device()},         {kV, v.device()},
                                  {kO, o.device()},         {kScale, scale},          {kSeqQ, seq_q.device()},
                                  {kSeqKv, seq_kv.device()}, {kRagQ, rag_q.device()}, {kRagK, rag_k.device()},
                                  {kRagV, rag_v.device()},   {kRagO, rag_o.device()}, {kLowest, lowest}};
    if (with_stats) {
      p[kStats] = stats.device();
      p[kRagStats] = rag_stats.device();
    }
    return p;
  }
  Buffer q, k, v, o, stats, seq_q, seq_kv, rag_q, rag_k, rag_v, rag_o, rag_stats;
};

struct RaggedDescs {
  cudnnBackendDescriptor_t q, k, kt, v, o, stats, scale, seq_q, seq_kv;
};

inline RaggedDescs RaggedTensors(BackendGraph* g, const RaggedCase& c, bool with_stats) {
  const std::vector<int64_t> ones = {1, 1, 1, 1};
  const int64_t b = c.b(), h = c.h, hk = c.hk, d = c.d;
  auto offsets = [&](int64_t uid) { return g->Tensor(uid, c.offsets, {b + 1, 1, 1, 1}, ones); };
  RaggedDescs t{};
  t.q = g->Tensor(kQ, c.io, {b, h, c.max_q, d}, {INT_MAX, d, h * d, 1}, false, false, offsets(kRagQ));
  const cudnnBackendDescriptor_t rk = offsets(kRagK);
  t.k = g->Tensor(kK, c.io, {b, hk, c.max_kv, d}, {INT_MAX, d, hk * d, 1}, false, false, rk);
  // K transposed, as cudnn-frontend's composite graph reads it (it swaps K's last two dimensions and strides in
  // place, keeping the uid; a graph uses k or kt, never both).
  t.kt = g->Tensor(kK, c.io, {b, hk, d, c.max_kv}, {INT_MAX, d, 1, hk * d}, false, false, rk);
  t.v = g->Tensor(kV, c.io, {b, hk, c.max_kv, d}, {INT_MAX, d, hk * d, 1}, false, false, offsets(kRagV));
  t.o = g->Tensor(kO, c.io, {b, h, c.max_q, d}, {INT_MAX, d, h * d, 1}, false, false, offsets(kRagO));
  t.stats = with_stats ? g->Tensor(kStats, CUDNN_DATA_FLOAT, {b, h, c.max_q, 1}, {h * c.max_q, 1, h, 1}, false,
                                   false, offsets(kRagStats))
                       : nullptr;
  t.scale = g->Tensor(kScale, CUDNN_DATA_FLOAT, ones, ones, false, true);
  t.seq_q = g->Tensor(kSeqQ, CUDNN_DATA_INT32, {b, 1, 1, 1}, ones);
  t.seq_kv = g->Tensor(kSeqKv, CUDNN_DATA_INT32, {b, 1, 1, 1}, ones);
  return t;
}

// The fused SDPA forward operation with sequence lengths over ragged Q, K, V, O (and Stats).
inline void BuildRaggedFused(BackendGraph* g, const RaggedCase& c, bool with_stats) {
  const RaggedDescs t = RaggedTensors(g, c, with_stats);
  g->Sdpa(t.q, t.k, t.v, t.o, t.stats, t.scale, t.seq_q, t.seq_kv);
}

}  // namespace simgpu::cudnn::testing

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_RAGGED_TEST_UTIL_H_
