// cudnn_graph_workload: cuDNN backend graphs built and executed the way cudnn-frontend does (tensor and operation
// descriptors, operation graph, heuristics, the first engine configuration, plan, variant pack), linked to
// libcudnn.so like any application, with a dump of every non-virtual tensor as the program uploaded or
// downloaded it:
//   seq 0  convolution forward graph, FP32 NCHW, pad 1, stride 2, alpha 1, beta 0
//   seq 1  fused SDPA_FWD, BF16, grouped-query (h 4, h_k 2), scale by value, Stats
//   seq 2  composite attention (matmul, scale, causal mask, max, sub, exp, sum, log, add, div, matmul), BF16, Stats
//   seq 3  composite attention with a padding mask and a causal mask, as cudnn-frontend lowers them (sequence
//          lengths per batch as INT32 [b, 1, 1, 1] tensors: matmul M/N/K overrides, the first matmul padded with 0,
//          index comparisons selecting −inf), BF16, Stats; O's rows past seq_len_q are not written
//   seq 4  convolution forward with a scale, bias, ReLU epilogue (cudnn-frontend's CSBR), BF16 data, the
//          convolution's output and the intermediates virtual FP32, per-channel scale and bias
//   seq 5  convolution backward data then ReLU backward against the forward input (dgrad-drelu)
//   seq 6  scale, bias, ReLU prologue (virtual BF16 intermediates) then convolution backward filter
//   seq 7  composite attention with an attention bias, a causal mask and custom dropout (a BF16 mask and a scale
//          the program supplies, multiplied into P after the softmax), as cudnn-frontend's sample builds it
//   seq 8  seq 4's graph with a leaky, clipped ReLU (lower clip −0.2, slope 0.15, upper clip 0.8, set as DOUBLE
//          attributes as cudnn-frontend sets them)
//   seq 9  composite attention as cudnn-frontend's "Toy sdpa forward with max and sum exp" lowers it: a bias, ALiBi
//          (row and column GEN_INDEX, their difference in INT32, times per-head FP32 slopes, added), padding and
//          causal masks, Max and Sum_exp as outputs instead of Stats, BF16
//   with --unchecked, seq 10: the same attention as seq 7 with RNG dropout (Bernoulli, seed and offset by value: not
//   replayable), seq 11: a graph the analyzer has no checker for (one pointwise RELU) and seq 12: a transpose as
//   cudnn-frontend's attention backward writes it (a RESHAPE swapping the last two dimensions and strides into a
//   virtual tensor, copied out by a pointwise IDENTITY) and seq 13: a paged cache load into memory (PagedLoad below)
//   with --sink instead, only seq 0: cudnn-frontend's composite attention with a sink token (SinkAttention below);
//   with --paged, only seq 0: its paged attention, K and V through PAGED_CACHE_LOAD (PagedAttention below)
//   with --paged-fused, only seq 0: the same attention without the causal mask as one fused SDPA_FWD with page
//   tables (PAGE_TABLE_KDESC / _VDESC, as cudnn-frontend's unified engine and Transformer Engine's KV cache build it)
//   with --native-graph, cuDNN's native CUDA graph API as cudnn-frontend uses it (NativeGraph below); with
//   --native-graph-execute, the same with a direct execution between the graph's launches and its update
//   with --stream-graph, a convolution graph executed on a capturing stream, the graph launched (StreamGraph below)
//   cudnn_graph_workload --dump FILE [--unchecked | --sink | --paged | --paged-fused | --native-graph |
//                                     --native-graph-execute | --stream-graph]
// Dump: per tensor, u64 seq, u8 slot (22 before, 23 after), i64 uid, u64 bytes, the bytes (all tensors packed).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "shim/testing/workload_util.h"
#include "tools/simgpu/common/nv_dtype.h"
#include "shim/testing/cudnn_graph.h"

namespace {

using ttrace::shim::testing::Die;
using ttrace::shim::testing::Convolution;
using ttrace::shim::testing::ConvolutionForward;
using ttrace::shim::testing::Desc;
using ttrace::shim::testing::Graph;

#define CHECK(x) \
  if (long s_ = static_cast<long>(x); s_ != 0) Die(#x, s_)

FILE* g_dump = nullptr;
std::mt19937 g_rng(7);
cudaStream_t g_stream = nullptr;

// A device tensor with its host image (FP32 or BF16 values in [-1, 1]).
struct Buf {
  int64_t uid;
  std::vector<uint8_t> host;
  void* dev = nullptr;
  Buf(int64_t id, size_t n, bool bf16) : uid(id), host(n * (bf16 ? 2 : 4)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      const float v = u(g_rng);
      const uint16_t b = simgpu::nv::FloatToBf16(v);
      memcpy(&host[i * (bf16 ? 2 : 4)], bf16 ? static_cast<const void*>(&b) : &v, bf16 ? 2 : 4);
    }
    CHECK(cudaMalloc(&dev, host.size()));
    CHECK(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  void Dump(uint64_t seq, uint8_t slot) {
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost));
    const uint64_t bytes = host.size();
    fwrite(&seq, 8, 1, g_dump);
    fwrite(&slot, 1, 1, g_dump);
    fwrite(&uid, 8, 1, g_dump);
    fwrite(&bytes, 8, 1, g_dump);
    fwrite(host.data(), 1, bytes, g_dump);
  }
};

void ConvGraph(cudnnHandle_t handle, uint64_t seq) {
  Graph g(Die);
  Buf x(1, 2 * 4 * 9 * 9, false), w(2, 6 * 4 * 3 * 3, false), y(3, 2 * 6 * 5 * 5, false);
  ConvolutionForward(g, g.Tensor(1, CUDNN_DATA_FLOAT, {2, 4, 9, 9}), g.Tensor(2, CUDNN_DATA_FLOAT, {6, 4, 3, 3}),
                     g.Tensor(3, CUDNN_DATA_FLOAT, {2, 6, 5, 5}), /*pad=*/1, /*stride=*/2);
  x.Dump(seq, 22);
  w.Dump(seq, 22);
  CHECK(g.Execute(handle, {{1, x.dev}, {2, w.dev}, {3, y.dev}}));
  y.Dump(seq, 23);
}

struct Attn {
  int64_t b, h, hk, sq, skv, d;
};

// Makes a virtual tensor of a graph (the next uid).
using Virt = std::function<Desc(cudnnDataType_t, const std::vector<int64_t>&)>;

// cudnn-frontend's causal mask (top left, right bound 0: row >= column) over scores [b, h, s_q, s_kv]: the scores
// where kept, ninf elsewhere.
Desc CausalMask(Graph& g, const Virt& virt, Desc scores, Desc ninf, const std::vector<int64_t>& sc) {
  Desc ri = virt(CUDNN_DATA_INT32, sc), ci = virt(CUDNN_DATA_INT32, sc), keep = virt(CUDNN_DATA_BOOLEAN, sc);
  Desc out = virt(CUDNN_DATA_FLOAT, sc);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, ri, nullptr, 2);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, ci, nullptr, 3);
  g.Pointwise(CUDNN_POINTWISE_CMP_GE, ri, ci, keep);
  g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, ninf, out, keep);
  return out;
}

// cudnn-frontend's padding mask over scores [b, h, s_q, s_kv]: the scores where row < seq_len_q and column <
// seq_len_kv, ninf elsewhere.
Desc PaddingMask(Graph& g, const Virt& virt, Desc scores, Desc len_q, Desc len_kv, Desc ninf,
                 const std::vector<int64_t>& sc) {
  const cudnnDataType_t i32 = CUDNN_DATA_INT32, boolean = CUDNN_DATA_BOOLEAN;
  Desc ri = virt(i32, sc), ci = virt(i32, sc), rm = virt(boolean, sc), cm = virt(boolean, sc), pm = virt(boolean, sc);
  Desc out = virt(CUDNN_DATA_FLOAT, sc);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, ri, nullptr, 2);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, ci, nullptr, 3);
  g.Pointwise(CUDNN_POINTWISE_CMP_LT, ri, len_q, rm);
  g.Pointwise(CUDNN_POINTWISE_CMP_LT, ci, len_kv, cm);
  g.Pointwise(CUDNN_POINTWISE_LOGICAL_AND, rm, cm, pm);
  g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, ninf, out, pm);
  return out;
}

// The logits of the ALiBi graphs over scores [b, h, s_q, s_kv]: Q·Kᵀ within the sequence lengths (padding 0),
// times the scale, plus the attention bias, plus ALiBi ((column − row) in INT32 math, times the head's slope).
Desc BiasedAlibiScores(Graph& g, const Virt& virt, Desc qd, Desc ktd, Desc lqd, Desc lkvd, Desc scd, Desc bd, Desc sld,
                       const std::vector<int64_t>& sc) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
  static const double zero = 0.0;
  Desc s1 = virt(f32, sc), s2 = virt(f32, sc), s3 = virt(f32, sc);
  g.Matmul(qd, ktd, s1, lqd, lkvd, nullptr, &zero);
  g.Pointwise(CUDNN_POINTWISE_MUL, s1, scd, s2);
  g.Pointwise(CUDNN_POINTWISE_ADD, s2, bd, s3);
  Desc ar = virt(i32, sc), ac = virt(i32, sc), ad = virt(i32, sc), am = virt(f32, sc), s4 = virt(f32, sc);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, s3, nullptr, ar, nullptr, 2, {}, i32);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, s3, nullptr, ac, nullptr, 3, {}, i32);
  g.Pointwise(CUDNN_POINTWISE_SUB, ac, ar, ad, nullptr, -1, {}, i32);
  g.Pointwise(CUDNN_POINTWISE_MUL, ad, sld, am);
  g.Pointwise(CUDNN_POINTWISE_ADD, s3, am, s4);
  return s4;
}

// cudnn-frontend's softmax over the keys with Stats (max + log of the sum, into `stats`): P, of type p_type.
Desc Softmax(Graph& g, const Virt& virt, Desc scores, Desc stats, cudnnDataType_t p_type,
             const std::vector<int64_t>& sc, const std::vector<int64_t>& row) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  Desc mx = virt(f32, row), sub = virt(f32, sc), ex = virt(f32, sc), sum = virt(f32, row), lg = virt(f32, row);
  Desc p = virt(p_type, sc);
  g.Reduction(CUDNN_REDUCE_TENSOR_MAX, scores, mx);
  g.Pointwise(CUDNN_POINTWISE_SUB, scores, mx, sub);
  g.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sum);
  g.Pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
  g.Pointwise(CUDNN_POINTWISE_ADD, mx, lg, stats);
  g.Pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
  return p;
}

// Q, K, V, O as in NVIDIA's samples ([b, h, s, d], packed); returns the buffers (uids 1..5: Q K V O Stats).
void Attention(cudnnHandle_t handle, uint64_t seq, const Attn& s, bool fused) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  Graph g(Die);
  Buf q(1, s.b * s.h * s.sq * s.d, true), k(2, s.b * s.hk * s.skv * s.d, true), v(3, s.b * s.hk * s.skv * s.d, true);
  Buf o(4, s.b * s.h * s.sq * s.d, true), stats(5, s.b * s.h * s.sq, false);
  float scale = 0.35f;
  const float neg_inf = -INFINITY;
  Desc qd = g.Tensor(1, io, {s.b, s.h, s.sq, s.d}), vd = g.Tensor(3, io, {s.b, s.hk, s.skv, s.d});
  Desc od = g.Tensor(4, io, {s.b, s.h, s.sq, s.d}), sd = g.Tensor(5, f32, {s.b, s.h, s.sq, 1});
  Desc scd = g.Tensor(6, f32, {1, 1, 1, 1}, false, true);
  if (fused) {
    Desc kd = g.Tensor(2, io, {s.b, s.hk, s.skv, s.d});
    g.Finish(g.Op(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
                  {{CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, qd}, {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, kd},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, vd}, {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, od},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, sd}, {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scd}}));
  } else {
    // Kᵀ through swapped strides, the causal mask from index comparisons, as cudnn-frontend builds them.
    const int64_t ks[4] = {s.hk * s.skv * s.d, s.skv * s.d, s.d, 1};
    Desc ktd = g.Strided(2, io, {s.b, s.hk, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
    const std::vector<int64_t> sc = {s.b, s.h, s.sq, s.skv}, row = {s.b, s.h, s.sq, 1};
    int64_t uid = 100;
    const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
    Desc s1 = virt(f32, sc), s2 = virt(f32, sc);
    Desc ninf = g.Tensor(7, f32, {1, 1, 1, 1}, false, true);
    g.Matmul(qd, ktd, s1);
    g.Pointwise(CUDNN_POINTWISE_MUL, s1, scd, s2);
    g.Matmul(Softmax(g, virt, CausalMask(g, virt, s2, ninf, sc), sd, io, sc, row), vd, od);
  }
  for (Buf* b : {&q, &k, &v}) b->Dump(seq, 22);
  std::map<int64_t, void*> data = {{1, q.dev}, {2, k.dev}, {3, v.dev}, {4, o.dev}, {5, stats.dev}, {6, &scale}};
  if (!fused) data[7] = const_cast<float*>(&neg_inf);
  CHECK(g.Execute(handle, data));
  o.Dump(seq, 23);
  stats.Dump(seq, 23);
}

// seq_q, seq_kv per batch; [b, h, s_q, d] packed Q and O, K and V [b, h, s_kv, d] (uids 1..5, 8, 9 the lengths).
void PaddedAttention(cudnnHandle_t handle, uint64_t seq, const Attn& s, const std::vector<int32_t>& seq_q,
                     const std::vector<int32_t>& seq_kv) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
  Graph g(Die);
  Buf q(1, s.b * s.h * s.sq * s.d, true), k(2, s.b * s.hk * s.skv * s.d, true), v(3, s.b * s.hk * s.skv * s.d, true);
  Buf o(4, s.b * s.h * s.sq * s.d, true), stats(5, s.b * s.h * s.sq, false);
  Buf lq(8, s.b, false), lkv(9, s.b, false);
  memcpy(lq.host.data(), seq_q.data(), 4 * s.b);
  memcpy(lkv.host.data(), seq_kv.data(), 4 * s.b);
  CHECK(cudaMemcpy(lq.dev, lq.host.data(), lq.host.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(lkv.dev, lkv.host.data(), lkv.host.size(), cudaMemcpyHostToDevice));
  float scale = 0.35f;
  const float neg_inf = -INFINITY;
  const double zero = 0.0;
  Desc qd = g.Tensor(1, io, {s.b, s.h, s.sq, s.d}), vd = g.Tensor(3, io, {s.b, s.hk, s.skv, s.d});
  Desc od = g.Tensor(4, io, {s.b, s.h, s.sq, s.d}), sd = g.Tensor(5, f32, {s.b, s.h, s.sq, 1});
  Desc scd = g.Tensor(6, f32, {1, 1, 1, 1}, false, true), ninf = g.Tensor(7, f32, {1, 1, 1, 1}, false, true);
  Desc lqd = g.Tensor(8, i32, {s.b, 1, 1, 1}), lkvd = g.Tensor(9, i32, {s.b, 1, 1, 1});
  const int64_t ks[4] = {s.hk * s.skv * s.d, s.skv * s.d, s.d, 1};
  Desc ktd = g.Strided(2, io, {s.b, s.hk, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
  const std::vector<int64_t> sc = {s.b, s.h, s.sq, s.skv}, row = {s.b, s.h, s.sq, 1};
  int64_t uid = 100;
  const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
  Desc s1 = virt(f32, sc), s2 = virt(f32, sc);
  g.Matmul(qd, ktd, s1, lqd, lkvd, nullptr, &zero);
  g.Pointwise(CUDNN_POINTWISE_MUL, s1, scd, s2);
  Desc s3 = PaddingMask(g, virt, s2, lqd, lkvd, ninf, sc);
  g.Matmul(Softmax(g, virt, CausalMask(g, virt, s3, ninf, sc), sd, io, sc, row), vd, od, lqd, nullptr, lkvd);
  for (Buf* b : {&q, &k, &v, &lq, &lkv}) b->Dump(seq, 22);
  std::map<int64_t, void*> data = {{1, q.dev}, {2, k.dev}, {3, v.dev}, {4, o.dev}, {5, stats.dev},
                                   {6, &scale}, {7, const_cast<float*>(&neg_inf)}, {8, lq.dev}, {9, lkv.dev}};
  CHECK(g.Execute(handle, data));
  o.Dump(seq, 23);
  stats.Dump(seq, 23);
}

// The three fusions of cudnn-frontend's convolution samples, small: n 2, c 4, k 6, 7x7, 3x3 filter, pad 1.
void ConvFusion(cudnnHandle_t handle, uint64_t seq, cudnnBackendDescriptorType_t type, bool leaky = false) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  const int64_t n = 2, c = 4, k = 6, h = 7, w = 7;
  const std::vector<int64_t> xs = {n, c, h, w}, ws = {k, c, 3, 3}, ys = {n, k, h, w};
  Graph g(Die);
  int64_t uid = 100;
  const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
  std::vector<Buf*> inputs;
  std::map<int64_t, void*> data;
  auto input = [&](Buf* b) {
    inputs.push_back(b);
    data[b->uid] = b->dev;
  };
  if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
    Buf x(1, n * c * h * w, true), wt(2, k * c * 9, true), scale(3, k, true), bias(4, k, true), y(5, n * k * h * w, true);
    Desc conv = virt(f32, ys), t1 = virt(f32, ys), t2 = virt(f32, ys);
    Desc sd = g.Tensor(3, io, {1, k, 1, 1}), bd = g.Tensor(4, io, {1, k, 1, 1});
    Convolution(g, type, g.Tensor(1, io, xs), g.Tensor(2, io, ws), conv, 1, 1);
    g.Pointwise(CUDNN_POINTWISE_MUL, conv, sd, t1);
    g.Pointwise(CUDNN_POINTWISE_ADD, t1, bd, t2);
    std::vector<std::pair<cudnnBackendAttributeName_t, double>> clips;
    if (leaky)
      clips = {{CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, -0.2}, {CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, 0.8},
               {CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, 0.15}};
    g.Pointwise(CUDNN_POINTWISE_RELU_FWD, t2, nullptr, g.Tensor(5, io, ys), nullptr, -1, clips);
    for (Buf* b : {&x, &wt, &scale, &bias}) input(b);
    for (Buf* b : inputs) b->Dump(seq, 22);
    data[5] = y.dev;
    CHECK(g.Execute(handle, data));
    y.Dump(seq, 23);
  } else if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    Buf dy(1, n * k * h * w, true), wt(2, k * c * 9, true), x(3, n * c * h * w, true), dx(4, n * c * h * w, true);
    Desc dgrad = virt(f32, xs);
    Convolution(g, type, dgrad, g.Tensor(2, io, ws), g.Tensor(1, io, ys), 1, 1);
    g.PointwiseBackward(CUDNN_POINTWISE_RELU_BWD, dgrad, g.Tensor(3, io, xs), g.Tensor(4, io, xs));
    for (Buf* b : {&dy, &wt, &x}) input(b);
    for (Buf* b : inputs) b->Dump(seq, 22);
    data[4] = dx.dev;
    CHECK(g.Execute(handle, data));
    dx.Dump(seq, 23);
  } else {
    Buf x(1, n * c * h * w, true), scale(2, c, true), bias(3, c, true), dy(4, n * k * h * w, true), dw(5, k * c * 9, true);
    Desc t1 = virt(io, xs), t2 = virt(io, xs), relu = virt(io, xs);
    g.Pointwise(CUDNN_POINTWISE_MUL, g.Tensor(1, io, xs), g.Tensor(2, io, {1, c, 1, 1}), t1);
    g.Pointwise(CUDNN_POINTWISE_ADD, t1, g.Tensor(3, io, {1, c, 1, 1}), t2);
    g.Pointwise(CUDNN_POINTWISE_RELU_FWD, t2, nullptr, relu);
    Convolution(g, type, relu, g.Tensor(5, io, ws), g.Tensor(4, io, ys), 1, 1);
    for (Buf* b : {&x, &scale, &bias, &dy}) input(b);
    for (Buf* b : inputs) b->Dump(seq, 22);
    data[5] = dw.dev;
    CHECK(g.Execute(handle, data));
    dw.Dump(seq, 23);
  }
}

// Q, K, V, O [b, h, s, d] (uids 1..5 as Attention), bias [b, 1, s_q, s_kv] (10); custom dropout: scale by value
// (11) and a BF16 mask (12), ~80% kept; rng: a Bernoulli RNG operation (seed 13, offset 14 by value) instead.
void DropoutAttention(cudnnHandle_t handle, uint64_t seq, const Attn& s, bool rng) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  Graph g(Die);
  Buf q(1, s.b * s.h * s.sq * s.d, true), k(2, s.b * s.h * s.skv * s.d, true), v(3, s.b * s.h * s.skv * s.d, true);
  Buf o(4, s.b * s.h * s.sq * s.d, true), stats(5, s.b * s.h * s.sq, false), bias(10, s.b * s.sq * s.skv, true);
  Buf mask(12, s.b * s.h * s.sq * s.skv, true);
  for (size_t i = 0; i < mask.host.size(); i += 2) {
    const uint16_t bits = simgpu::nv::Bf16ToFloat(static_cast<uint16_t>(mask.host[i] | mask.host[i + 1] << 8)) > -0.6f
                              ? 0x3f80 : 0;
    mask.host[i] = static_cast<uint8_t>(bits), mask.host[i + 1] = static_cast<uint8_t>(bits >> 8);
  }
  CHECK(cudaMemcpy(mask.dev, mask.host.data(), mask.host.size(), cudaMemcpyHostToDevice));
  float scale = 0.35f, drop_scale = 1.25f;
  const float neg_inf = -INFINITY;
  int64_t seed = 1234, offset = 0;
  Desc qd = g.Tensor(1, io, {s.b, s.h, s.sq, s.d}), vd = g.Tensor(3, io, {s.b, s.h, s.skv, s.d});
  Desc od = g.Tensor(4, io, {s.b, s.h, s.sq, s.d}), sd = g.Tensor(5, f32, {s.b, s.h, s.sq, 1});
  Desc scd = g.Tensor(6, f32, {1, 1, 1, 1}, false, true), ninf = g.Tensor(7, f32, {1, 1, 1, 1}, false, true);
  Desc bd = g.Tensor(10, io, {s.b, 1, s.sq, s.skv}), dsd = g.Tensor(11, f32, {1, 1, 1, 1}, false, true);
  const int64_t ks[4] = {s.h * s.skv * s.d, s.skv * s.d, s.d, 1};
  Desc ktd = g.Strided(2, io, {s.b, s.h, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
  const std::vector<int64_t> sc = {s.b, s.h, s.sq, s.skv}, row = {s.b, s.h, s.sq, 1};
  int64_t uid = 100;
  const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
  Desc s1 = virt(f32, sc), s2 = virt(f32, sc), s3 = virt(f32, sc);
  g.Matmul(qd, ktd, s1);
  g.Pointwise(CUDNN_POINTWISE_MUL, s1, scd, s2);
  g.Pointwise(CUDNN_POINTWISE_ADD, s2, bd, s3);
  Desc soft = Softmax(g, virt, CausalMask(g, virt, s3, ninf, sc), sd, f32, sc, row);
  Desc t = virt(f32, sc), p = virt(io, sc);
  std::map<int64_t, void*> data = {{1, q.dev},   {2, k.dev},      {3, v.dev},  {4, o.dev},          {5, stats.dev},
                                   {6, &scale}, {7, const_cast<float*>(&neg_inf)}, {10, bias.dev}, {11, &drop_scale}};
  if (rng) {
    Desc r = g.Make(CUDNN_BACKEND_RNG_DESCRIPTOR);
    const cudnnRngDistribution_t bernoulli = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
    const double keep_probability = 0.8;
    g.Set(r, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1, &bernoulli);
    g.Set(r, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &keep_probability);
    g.Finish(r);
    Desc bits = virt(f32, sc);
    g.Finish(g.Op(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR,
                  {{CUDNN_ATTR_OPERATION_RNG_YDESC, bits},
                   {CUDNN_ATTR_OPERATION_RNG_SEED, g.Tensor(13, CUDNN_DATA_INT64, {1, 1, 1, 1}, false, true)},
                   {CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, g.Tensor(14, CUDNN_DATA_INT64, {1, 1, 1, 1}, false, true)},
                   {CUDNN_ATTR_OPERATION_RNG_DESC, r}}));
    g.Pointwise(CUDNN_POINTWISE_MUL, soft, bits, t);
    g.Pointwise(CUDNN_POINTWISE_MUL, t, dsd, p);
    data[13] = &seed, data[14] = &offset;
  } else {
    g.Pointwise(CUDNN_POINTWISE_MUL, soft, dsd, t);
    g.Pointwise(CUDNN_POINTWISE_MUL, t, g.Tensor(12, io, sc), p);
    data[12] = mask.dev;
  }
  g.Matmul(p, vd, od);
  for (Buf* b : {&q, &k, &v, &bias}) b->Dump(seq, 22);
  if (!rng) mask.Dump(seq, 22);
  CHECK(g.Execute(handle, data));
  o.Dump(seq, 23);
  stats.Dump(seq, 23);
}

// Q, K, V, O [b, h, s, d] (uids 1..4), Max and Sum_exp [b, h, s_q, 1] (5, 6), bias [b, 1, s_q, s_kv] (10), ALiBi
// slopes [1, h, 1, 1] FP32 (15: cudnn-frontend's for h heads, which it writes to the workspace), sequence lengths
// (8, 9); the operations in cudnn-frontend's order.
void MaxSumExpAttention(cudnnHandle_t handle, uint64_t seq, const Attn& s, const std::vector<int32_t>& seq_q,
                        const std::vector<int32_t>& seq_kv) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
  Graph g(Die);
  Buf q(1, s.b * s.h * s.sq * s.d, true), k(2, s.b * s.h * s.skv * s.d, true), v(3, s.b * s.h * s.skv * s.d, true);
  Buf o(4, s.b * s.h * s.sq * s.d, true), mx(5, s.b * s.h * s.sq, false), se(6, s.b * s.h * s.sq, false);
  Buf bias(10, s.b * s.sq * s.skv, true), slopes(15, s.h, false), lq(8, s.b, false), lkv(9, s.b, false);
  std::vector<float> slope(static_cast<size_t>(s.h));  // cudnn-frontend's get_alibi_slope for a power-of-two h
  for (int64_t i = 0; i < s.h; ++i) slope[static_cast<size_t>(i)] = std::pow(2.0f, -8.0f * (i + 1) / s.h);
  memcpy(slopes.host.data(), slope.data(), 4 * s.h);
  memcpy(lq.host.data(), seq_q.data(), 4 * s.b);
  memcpy(lkv.host.data(), seq_kv.data(), 4 * s.b);
  for (Buf* b : {&slopes, &lq, &lkv}) CHECK(cudaMemcpy(b->dev, b->host.data(), b->host.size(), cudaMemcpyHostToDevice));
  float scale = 0.123f;
  const float neg_inf = -INFINITY;
  Desc qd = g.Tensor(1, io, {s.b, s.h, s.sq, s.d}), vd = g.Tensor(3, io, {s.b, s.h, s.skv, s.d});
  Desc od = g.Tensor(4, io, {s.b, s.h, s.sq, s.d});
  Desc mxd = g.Tensor(5, f32, {s.b, s.h, s.sq, 1}), sed = g.Tensor(6, f32, {s.b, s.h, s.sq, 1});
  Desc scd = g.Tensor(11, f32, {1, 1, 1, 1}, false, true), ninf = g.Tensor(7, f32, {1, 1, 1, 1}, false, true);
  Desc bd = g.Tensor(10, io, {s.b, 1, s.sq, s.skv}), sld = g.Tensor(15, f32, {1, s.h, 1, 1});
  Desc lqd = g.Tensor(8, i32, {s.b, 1, 1, 1}), lkvd = g.Tensor(9, i32, {s.b, 1, 1, 1});
  const int64_t ks[4] = {s.h * s.skv * s.d, s.skv * s.d, s.d, 1};
  Desc ktd = g.Strided(2, io, {s.b, s.h, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
  const std::vector<int64_t> sc = {s.b, s.h, s.sq, s.skv};
  int64_t uid = 100;
  const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
  Desc s4 = BiasedAlibiScores(g, virt, qd, ktd, lqd, lkvd, scd, bd, sld, sc);
  Desc s5 = PaddingMask(g, virt, s4, lqd, lkvd, ninf, sc);
  // The softmax without Stats: Max and Sum_exp are its max and sum reductions, written.
  Desc masked = CausalMask(g, virt, s5, ninf, sc);
  Desc sub = virt(f32, sc), ex = virt(f32, sc), p = virt(io, sc);
  g.Reduction(CUDNN_REDUCE_TENSOR_MAX, masked, mxd);
  g.Pointwise(CUDNN_POINTWISE_SUB, masked, mxd, sub);
  g.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sed);
  g.Pointwise(CUDNN_POINTWISE_DIV, ex, sed, p);
  g.Matmul(p, vd, od, lqd, nullptr, lkvd);
  for (Buf* b : {&q, &k, &v, &bias, &slopes, &lq, &lkv}) b->Dump(seq, 22);
  std::map<int64_t, void*> data = {{1, q.dev},      {2, k.dev},   {3, v.dev},    {4, o.dev},
                                   {5, mx.dev},     {6, se.dev},  {7, const_cast<float*>(&neg_inf)},
                                   {8, lq.dev},     {9, lkv.dev}, {10, bias.dev}, {11, &scale}, {15, slopes.dev}};
  CHECK(g.Execute(handle, data));
  o.Dump(seq, 23);
  mx.Dump(seq, 23);
  se.Dump(seq, 23);
}

// cudnn-frontend's "Toy sdpa forward with sink" as its CompositeSoftmaxNode lowers it: seq 9's bias, ALiBi, padding
// and causal masks, then the softmax with a sink token (FP32 [1, h, 1, 1], uid 16): a MAX reduction whose output keeps
// the scores' shape (cudnn-frontend leaves it unset), a pointwise MAX of it and the sink into the [b, h, s_q, 1] row
// maximum, the sink's exponential added to the sum, Stats (uid 5) = max + log(sum); O (uid 4).
void SinkAttention(cudnnHandle_t handle, uint64_t seq, const Attn& s, const std::vector<int32_t>& seq_q,
                   const std::vector<int32_t>& seq_kv, const std::vector<float>& sinks) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
  Graph g(Die);
  Buf q(1, s.b * s.h * s.sq * s.d, true), k(2, s.b * s.h * s.skv * s.d, true), v(3, s.b * s.h * s.skv * s.d, true);
  Buf o(4, s.b * s.h * s.sq * s.d, true), stats(5, s.b * s.h * s.sq, false), sink(16, s.h, false);
  Buf bias(10, s.b * s.sq * s.skv, true), slopes(15, s.h, false), lq(8, s.b, false), lkv(9, s.b, false);
  std::vector<float> slope(static_cast<size_t>(s.h));
  for (int64_t i = 0; i < s.h; ++i) slope[static_cast<size_t>(i)] = std::pow(2.0f, -8.0f * (i + 1) / s.h);
  memcpy(slopes.host.data(), slope.data(), 4 * s.h);
  memcpy(sink.host.data(), sinks.data(), 4 * s.h);
  memcpy(lq.host.data(), seq_q.data(), 4 * s.b);
  memcpy(lkv.host.data(), seq_kv.data(), 4 * s.b);
  for (Buf* b : {&slopes, &sink, &lq, &lkv})
    CHECK(cudaMemcpy(b->dev, b->host.data(), b->host.size(), cudaMemcpyHostToDevice));
  float scale = 0.123f;
  const float neg_inf = -INFINITY;
  Desc qd = g.Tensor(1, io, {s.b, s.h, s.sq, s.d}), vd = g.Tensor(3, io, {s.b, s.h, s.skv, s.d});
  Desc od = g.Tensor(4, io, {s.b, s.h, s.sq, s.d}), statsd = g.Tensor(5, f32, {s.b, s.h, s.sq, 1});
  Desc scd = g.Tensor(11, f32, {1, 1, 1, 1}, false, true), ninf = g.Tensor(7, f32, {1, 1, 1, 1}, false, true);
  Desc bd = g.Tensor(10, io, {s.b, 1, s.sq, s.skv}), sld = g.Tensor(15, f32, {1, s.h, 1, 1});
  Desc skd = g.Tensor(16, f32, {1, s.h, 1, 1});
  Desc lqd = g.Tensor(8, i32, {s.b, 1, 1, 1}), lkvd = g.Tensor(9, i32, {s.b, 1, 1, 1});
  const int64_t ks[4] = {s.h * s.skv * s.d, s.skv * s.d, s.d, 1};
  Desc ktd = g.Strided(2, io, {s.b, s.h, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
  const std::vector<int64_t> sc = {s.b, s.h, s.sq, s.skv}, row = {s.b, s.h, s.sq, 1};
  int64_t uid = 100;
  const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
  Desc s4 = BiasedAlibiScores(g, virt, qd, ktd, lqd, lkvd, scd, bd, sld, sc);
  Desc s5 = PaddingMask(g, virt, s4, lqd, lkvd, ninf, sc);
  Desc masked = CausalMask(g, virt, s5, ninf, sc);
  Desc s_max = virt(f32, sc), mx = virt(f32, row), sub = virt(f32, sc), ex = virt(f32, sc);
  Desc sub_sink = virt(f32, row), exp_sink = virt(f32, row), part = virt(f32, row), sum = virt(f32, row);
  Desc lg = virt(f32, row), p = virt(io, sc);
  g.Reduction(CUDNN_REDUCE_TENSOR_MAX, masked, s_max);  // output left at the input's shape: reduces nothing
  g.Pointwise(CUDNN_POINTWISE_MAX, s_max, skd, mx);     // [b, h, s_q, s_kv] and [1, h, 1, 1] into [b, h, s_q, 1]
  g.Pointwise(CUDNN_POINTWISE_SUB, masked, mx, sub);
  g.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  g.Pointwise(CUDNN_POINTWISE_SUB, skd, mx, sub_sink);
  g.Pointwise(CUDNN_POINTWISE_EXP, sub_sink, nullptr, exp_sink);
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, ex, part);
  g.Pointwise(CUDNN_POINTWISE_ADD, part, exp_sink, sum);
  g.Pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
  g.Pointwise(CUDNN_POINTWISE_ADD, mx, lg, statsd);
  g.Pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
  g.Matmul(p, vd, od, lqd, nullptr, lkvd);
  for (Buf* b : {&q, &k, &v, &bias, &slopes, &sink, &lq, &lkv}) b->Dump(seq, 22);
  std::map<int64_t, void*> data = {{1, q.dev},  {2, k.dev},      {3, v.dev},   {4, o.dev},
                                   {5, stats.dev}, {7, const_cast<float*>(&neg_inf)},
                                   {8, lq.dev}, {9, lkv.dev},    {10, bias.dev}, {11, &scale},
                                   {15, slopes.dev}, {16, sink.dev}};
  CHECK(g.Execute(handle, data));
  o.Dump(seq, 23);
  stats.Dump(seq, 23);
}

void Relu(cudnnHandle_t handle, uint64_t seq) {
  Graph g(Die);
  Buf x(1, 64, false), y(2, 64, false);
  g.Pointwise(CUDNN_POINTWISE_RELU_FWD, g.Tensor(1, CUDNN_DATA_FLOAT, {1, 1, 8, 8}), nullptr,
              g.Tensor(2, CUDNN_DATA_FLOAT, {1, 1, 8, 8}));
  x.Dump(seq, 22);
  CHECK(g.Execute(handle, {{1, x.dev}, {2, y.dev}}));
  y.Dump(seq, 23);
}

// cudnn-frontend's paged attention (its composite with padding and causal masks, as seq 3) with K and V in page
// containers [blocks, h_k, 2, d] (uids 2, 3: 4 blocks per sequence, 4 * b blocks, shuffled) read through page tables
// [b, 1, 4, 1] (uids 12, 13) by two PAGED_CACHE_LOAD operations (sequence lengths: seq_len_kv, uid 9) into virtual
// K^T [b, h_k, d, s_kv] (its third dimension's stride 1) and V [b, h_k, s_kv, d]; a table entry past a sequence's
// length is garbage (-7), as cudnn-frontend's decode sample leaves it. `fused`: one SDPA_FWD operation reads the
// containers through the tables instead (its padding mask from both sequence lengths, no causal mask).
void PagedAttention(cudnnHandle_t handle, uint64_t seq, const Attn& s, const std::vector<int32_t>& seq_q,
                    const std::vector<int32_t>& seq_kv, bool fused = false) {
  const cudnnDataType_t io = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
  const int64_t bs = 2, n = (s.skv + bs - 1) / bs, blocks = n * s.b;
  Graph g(Die);
  Buf q(1, s.b * s.h * s.sq * s.d, true), k(2, blocks * s.hk * bs * s.d, true), v(3, blocks * s.hk * bs * s.d, true);
  Buf o(4, s.b * s.h * s.sq * s.d, true), stats(5, s.b * s.h * s.sq, false);
  Buf lq(8, s.b, false), lkv(9, s.b, false), tk(12, s.b * n, false), tv(13, s.b * n, false);
  std::vector<int32_t> pk(static_cast<size_t>(blocks)), pv(static_cast<size_t>(blocks));
  for (int64_t i = 0; i < blocks; ++i) pk[static_cast<size_t>(i)] = static_cast<int32_t>((i * 5 + 3) % blocks);
  for (int64_t i = 0; i < blocks; ++i) pv[static_cast<size_t>(i)] = static_cast<int32_t>(blocks - 1 - i);
  for (int64_t i = 0; i < s.b; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (j * bs >= seq_kv[static_cast<size_t>(i)]) pk[static_cast<size_t>(i * n + j)] = pv[static_cast<size_t>(i * n + j)] = -7;
  memcpy(tk.host.data(), pk.data(), 4 * blocks);
  memcpy(tv.host.data(), pv.data(), 4 * blocks);
  memcpy(lq.host.data(), seq_q.data(), 4 * s.b);
  memcpy(lkv.host.data(), seq_kv.data(), 4 * s.b);
  for (Buf* b : {&lq, &lkv, &tk, &tv}) CHECK(cudaMemcpy(b->dev, b->host.data(), b->host.size(), cudaMemcpyHostToDevice));
  float scale = 0.35f;
  const float neg_inf = -INFINITY;
  const double zero = 0.0;
  Desc qd = g.Tensor(1, io, {s.b, s.h, s.sq, s.d}), od = g.Tensor(4, io, {s.b, s.h, s.sq, s.d});
  Desc sd = g.Tensor(5, f32, {s.b, s.h, s.sq, 1});
  Desc scd = g.Tensor(6, f32, {1, 1, 1, 1}, false, true), ninf = g.Tensor(7, f32, {1, 1, 1, 1}, false, true);
  Desc lqd = g.Tensor(8, i32, {s.b, 1, 1, 1}), lkvd = g.Tensor(9, i32, {s.b, 1, 1, 1});
  Desc ckd = g.Tensor(2, io, {blocks, s.hk, bs, s.d}), cvd = g.Tensor(3, io, {blocks, s.hk, bs, s.d});
  Desc tkd = g.Tensor(12, i32, {s.b, 1, n, 1}), tvd = g.Tensor(13, i32, {s.b, 1, n, 1});
  std::map<int64_t, void*> data = {{1, q.dev},     {2, k.dev},     {3, v.dev},   {4, o.dev},
                                   {5, stats.dev}, {6, &scale},    {8, lq.dev},  {9, lkv.dev},
                                   {12, tk.dev},   {13, tv.dev}};
  if (fused) {
    g.Finish(g.Op(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
                  {{CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, qd}, {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, ckd},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, cvd}, {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, od},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, sd}, {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scd},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, lqd},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, lkvd},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC, tkd},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_VDESC, tvd}}));
    for (Buf* b : {&q, &k, &v, &lq, &lkv, &tk, &tv}) b->Dump(seq, 22);
    CHECK(g.Execute(handle, data));
    o.Dump(seq, 23);
    stats.Dump(seq, 23);
    return;
  }
  Desc ktd = g.Strided(200, io, {s.b, s.hk, s.d, s.skv}, {s.hk * s.skv * s.d, s.skv * s.d, 1, s.d}, true);
  Desc vd = g.Strided(201, io, {s.b, s.hk, s.skv, s.d}, {s.hk * s.skv * s.d, s.skv * s.d, s.d, 1}, true);
  for (const auto& [container, table, y] : {std::tuple{ckd, tkd, ktd}, std::tuple{cvd, tvd, vd}}) {
    g.Finish(g.Op(CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR,
                  {{CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, container},
                   {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, table},
                   {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, lkvd},
                   {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, y}}));
  }
  const std::vector<int64_t> sc = {s.b, s.h, s.sq, s.skv}, row = {s.b, s.h, s.sq, 1};
  int64_t uid = 100;
  const Virt virt = [&](cudnnDataType_t t, const std::vector<int64_t>& dims) { return g.Tensor(++uid, t, dims, true); };
  Desc s1 = virt(f32, sc), s2 = virt(f32, sc);
  g.Matmul(qd, ktd, s1, lqd, lkvd, nullptr, &zero);
  g.Pointwise(CUDNN_POINTWISE_MUL, s1, scd, s2);
  Desc s3 = PaddingMask(g, virt, s2, lqd, lkvd, ninf, sc);
  g.Matmul(Softmax(g, virt, CausalMask(g, virt, s3, ninf, sc), sd, io, sc, row), vd, od, lqd, nullptr, lkvd);
  for (Buf* b : {&q, &k, &v, &lq, &lkv, &tk, &tv}) b->Dump(seq, 22);
  data[7] = const_cast<float*>(&neg_inf);
  CHECK(g.Execute(handle, data));
  o.Dump(seq, 23);
  stats.Dump(seq, 23);
}

// A paged cache load as cudnn-frontend's paged attention builds one for V (container [6, 2, 2, 3] FP32 uid 1, page
// table [2, 1, 3, 1] INT32 uid 2, sequence lengths [2, 1, 1, 1] uid 3), into a non-virtual y [2, 2, 6, 3] (uid 4).
void PagedLoad(cudnnHandle_t handle, uint64_t seq) {
  Graph g(Die);
  Buf container(1, 72, false), table(2, 6, false), lens(3, 2, false), y(4, 72, false);
  const int32_t pages[6] = {4, 0, 5, 2, 3, 1}, len[2] = {5, 6};
  memcpy(table.host.data(), pages, sizeof pages);
  memcpy(lens.host.data(), len, sizeof len);
  for (Buf* b : {&table, &lens}) CHECK(cudaMemcpy(b->dev, b->host.data(), b->host.size(), cudaMemcpyHostToDevice));
  g.Finish(g.Op(CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, g.Tensor(1, CUDNN_DATA_FLOAT, {6, 2, 2, 3})},
                 {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, g.Tensor(2, CUDNN_DATA_INT32, {2, 1, 3, 1})},
                 {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, g.Tensor(3, CUDNN_DATA_INT32, {2, 1, 1, 1})},
                 {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, g.Tensor(4, CUDNN_DATA_FLOAT, {2, 2, 6, 3})}}));
  for (Buf* b : {&container, &table, &lens}) b->Dump(seq, 22);
  CHECK(g.Execute(handle, {{1, container.dev}, {2, table.dev}, {3, lens.dev}, {4, y.dev}}));
  y.Dump(seq, 23);
}

void Transpose(cudnnHandle_t handle, uint64_t seq) {
  Graph g(Die);
  Buf x(1, 32, false), y(2, 32, false);
  Desc t = g.Strided(100, CUDNN_DATA_FLOAT, {1, 1, 8, 4}, {32, 32, 1, 8}, true);
  g.Finish(g.Op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, g.Tensor(1, CUDNN_DATA_FLOAT, {1, 1, 4, 8})},
                 {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, t}}));
  g.Pointwise(CUDNN_POINTWISE_IDENTITY, t, nullptr, g.Tensor(2, CUDNN_DATA_FLOAT, {1, 1, 8, 4}));
  x.Dump(seq, 22);
  CHECK(g.Execute(handle, {{1, x.dev}, {2, y.dev}}));
  y.Dump(seq, 23);
}

// Prints `graph`'s nodes as the program sees them, one line each, sorted: "<label>: <node> after <nodes>", a node
// being "kernel", "host", "copy(NAME)" (a copy from the buffer `names` calls NAME) or "other".
void PrintGraph(const char* label, cudaGraph_t graph, const std::map<const void*, std::string>& names) {
  size_t n = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  auto name = [&names](cudaGraphNode_t node) -> std::string {
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) return "kernel";
    if (type == cudaGraphNodeTypeHost) return "host";
    if (type != cudaGraphNodeTypeMemcpy) return "other";
    cudaMemcpy3DParms m = {};
    CHECK(cudaGraphMemcpyNodeGetParams(node, &m));
    auto it = names.find(m.srcPtr.ptr);
    return "copy(" + (it == names.end() ? std::string("?") : it->second) + ")";
  };
  std::vector<std::string> lines;
  for (cudaGraphNode_t node : nodes) {
    size_t d = 0;
    CHECK(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &d));
    std::vector<cudaGraphNode_t> deps(d);
    if (d > 0) CHECK(cudaGraphNodeGetDependencies(node, deps.data(), nullptr, &d));
    std::vector<std::string> after;
    for (cudaGraphNode_t dep : deps) after.push_back(name(dep));
    std::sort(after.begin(), after.end());
    std::string line = std::string(label) + ": " + name(node) + " after";
    for (size_t i = 0; i < after.size(); ++i) line += (i == 0 ? " " : ",") + after[i];
    lines.push_back(after.empty() ? line + " -" : line);
  }
  std::sort(lines.begin(), lines.end());
  for (const std::string& line : lines) printf("%s\n", line.c_str());
}

// cuDNN's native CUDA graph API as cudnn-frontend drives it (graph.h populate_cuda_graph / update_cuda_graph): a
// scratch cudaGraph_t is populated with the convolution on (x1, w, y1), cloned into a child graph node of the
// program's graph and destroyed; the program's graph is instantiated and launched 3 times, x1 refilled before each
// (dumped as seq 100 + k: x1 before, y1 after); an update of the child's embedded graph with another plan of the same
// graph, which cuDNN refuses (its status printed: "bad update status N"), and a launch (seq 103: x1, y1: the graph
// still on the first pack); the update to (x2, w, y2), then launches with x2 refilled before each, each in its own way
// to the new work: the executable's child node set to the embedded graph (cudaGraphExecChildGraphNodeSetParams,
// cudnn-frontend's samples; seq 104), cudaGraphExecUpdate (seq 105), a fresh instantiation (seq 106); last the plan
// executed directly on (x2, w, y3) (seq 107: y3), which must equal launch 106's y2. The populated and the updated
// graphs' nodes and edges are printed (PrintGraph). With `execute_before_update` (--native-graph-execute), the plan is
// also executed directly on (x1, w, y3) between launch 103 and the update (seq 99: y3).
void NativeGraph(cudnnHandle_t handle, bool execute_before_update) {
  Graph g(Die);
  Buf x1(1, 2 * 4 * 9 * 9, false), w(2, 6 * 4 * 3 * 3, false), y1(3, 2 * 6 * 5 * 5, false);
  Buf x2(1, 2 * 4 * 9 * 9, false), y2(3, 2 * 6 * 5 * 5, false), y3(3, 2 * 6 * 5 * 5, false);
  ConvolutionForward(g, g.Tensor(1, CUDNN_DATA_FLOAT, {2, 4, 9, 9}), g.Tensor(2, CUDNN_DATA_FLOAT, {6, 4, 3, 3}),
                     g.Tensor(3, CUDNN_DATA_FLOAT, {2, 6, 5, 5}), /*pad=*/1, /*stride=*/2);
  auto pack = [&g](void* x, void* wp, void* y) {
    const int64_t uids[3] = {1, 2, 3};
    void* ptrs[3] = {x, wp, y};
    void* workspace = nullptr;
    Desc p = g.Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    g.Set(p, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    g.Set(p, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    g.Set(p, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    CHECK(cudnnBackendFinalize(p));
    return p;
  };
  auto refill = [](Buf& x) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < x.host.size() / 4; ++i) {
      const float v = u(g_rng);
      memcpy(&x.host[i * 4], &v, 4);
    }
    CHECK(cudaMemcpy(x.dev, x.host.data(), x.host.size(), cudaMemcpyHostToDevice));
  };
  cudaGraph_t scratch = nullptr, program = nullptr, embedded = nullptr;
  CHECK(cudaGraphCreate(&scratch, 0));
  CHECK(cudaGraphCreate(&program, 0));
  Desc plan = nullptr;
  CHECK(g.Run(handle, {{1, x1.dev}, {2, w.dev}, {3, y1.dev}}, [&](cudnnHandle_t h, Desc p, Desc pk) {
    plan = p;
    return cudnnBackendPopulateCudaGraph(h, p, pk, scratch);
  }));
  const std::map<const void*, std::string> names = {{x1.dev, "x1"}, {w.dev, "w"}, {y1.dev, "y1"},
                                                    {x2.dev, "x2"}, {y2.dev, "y2"}};
  PrintGraph("populated", scratch, names);
  cudaGraphNode_t node = nullptr;
  CHECK(cudaGraphAddChildGraphNode(&node, program, nullptr, 0, scratch));
  CHECK(cudaGraphDestroy(scratch));
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, program, 0));
  for (uint64_t k = 0; k < 3; ++k) {
    refill(x1);
    x1.Dump(100 + k, 22);
    CHECK(cudaGraphLaunch(exec, g_stream));
    y1.Dump(100 + k, 23);
  }
  CHECK(cudaGraphChildGraphNodeGetGraph(node, &embedded));
  const cudnnStatus_t bad = g.Run(handle, {{1, x2.dev}, {2, w.dev}, {3, y2.dev}}, [&](cudnnHandle_t h, Desc p, Desc pk) {
    return cudnnBackendUpdateCudaGraph(h, p, pk, embedded);
  });
  if (bad == CUDNN_STATUS_SUCCESS) Die("an update with another plan succeeded", 0);
  printf("bad update status %d\n", static_cast<int>(bad));
  refill(x1);
  x1.Dump(103, 22);
  CHECK(cudaGraphLaunch(exec, g_stream));
  y1.Dump(103, 23);
  if (execute_before_update) {
    CHECK(cudnnBackendExecute(handle, plan, pack(x1.dev, w.dev, y3.dev)));
    y3.Dump(99, 23);
  }
  CHECK(cudnnBackendUpdateCudaGraph(handle, plan, pack(x2.dev, w.dev, y2.dev), embedded));
  PrintGraph("updated", embedded, names);
  cudaGraphExec_t fresh = nullptr;
  for (uint64_t k = 0; k < 3; ++k) {
    if (k == 0) CHECK(cudaGraphExecChildGraphNodeSetParams(exec, node, embedded));
    if (k == 1) {
      cudaGraphExecUpdateResultInfo info = {};
      CHECK(cudaGraphExecUpdate(exec, program, &info));
    }
    if (k == 2) CHECK(cudaGraphInstantiate(&fresh, program, 0));
    refill(x2);
    x2.Dump(104 + k, 22);
    CHECK(cudaGraphLaunch(k == 2 ? fresh : exec, g_stream));
    y2.Dump(104 + k, 23);
  }
  CHECK(cudnnBackendExecute(handle, plan, pack(x2.dev, w.dev, y3.dev)));
  y3.Dump(107, 23);
  CHECK(cudaGraphExecDestroy(fresh));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(program));
}

// The convolution executed while the stream captures a CUDA graph (stream capture, not the native API), the graph
// launched 3 times with x refilled before each (dumped as seq 200 + k: x before, y after).
void StreamGraph(cudnnHandle_t handle) {
  Graph g(Die);
  Buf x(1, 2 * 4 * 9 * 9, false), w(2, 6 * 4 * 3 * 3, false), y(3, 2 * 6 * 5 * 5, false);
  ConvolutionForward(g, g.Tensor(1, CUDNN_DATA_FLOAT, {2, 4, 9, 9}), g.Tensor(2, CUDNN_DATA_FLOAT, {6, 4, 3, 3}),
                     g.Tensor(3, CUDNN_DATA_FLOAT, {2, 6, 5, 5}), /*pad=*/1, /*stride=*/2);
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
  CHECK(g.Execute(handle, {{1, x.dev}, {2, w.dev}, {3, y.dev}}));
  CHECK(cudaStreamEndCapture(g_stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (uint64_t k = 0; k < 3; ++k) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < x.host.size() / 4; ++i) {
      const float v = u(g_rng);
      memcpy(&x.host[i * 4], &v, 4);
    }
    CHECK(cudaMemcpy(x.dev, x.host.data(), x.host.size(), cudaMemcpyHostToDevice));
    x.Dump(200 + k, 22);
    CHECK(cudaGraphLaunch(exec, g_stream));
    y.Dump(200 + k, 23);
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || strcmp(argv[1], "--dump") != 0) {
    fprintf(stderr, "usage: cudnn_graph_workload --dump FILE [--unchecked | --sink | --paged | --paged-fused | "
                    "--native-graph | --native-graph-execute | --stream-graph]\n");
    return 2;
  }
  g_dump = fopen(argv[2], "wb");
  if (g_dump == nullptr) Die("fopen", 0);
  cudnnHandle_t handle;
  CHECK(cudnnCreate(&handle));
  CHECK(cudaStreamCreate(&g_stream));
  CHECK(cudnnSetStream(handle, g_stream));
  if (argc > 3 && (strcmp(argv[3], "--paged") == 0 || strcmp(argv[3], "--paged-fused") == 0)) {
    PagedAttention(handle, 0, Attn{3, 2, 1, 6, 7, 8}, {6, 3, 4}, {7, 5, 2}, strcmp(argv[3], "--paged-fused") == 0);
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudnnDestroy(handle));
    fclose(g_dump);
    return 0;
  }
  if (argc > 3 && (strncmp(argv[3], "--native-graph", 14) == 0 || strcmp(argv[3], "--stream-graph") == 0)) {
    if (strcmp(argv[3], "--native-graph") == 0) NativeGraph(handle, false);
    if (strcmp(argv[3], "--native-graph-execute") == 0) NativeGraph(handle, true);
    if (strcmp(argv[3], "--stream-graph") == 0) StreamGraph(handle);
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudnnDestroy(handle));
    fclose(g_dump);
    return 0;
  }
  if (argc > 3 && strcmp(argv[3], "--sink") == 0) {
    // Sinks below, among and above the heads' logits (scale·S within ±0.25, the bias within ±1).
    SinkAttention(handle, 0, Attn{2, 4, 4, 6, 7, 8}, {6, 3}, {7, 5}, {-3.0f, 0.0f, 0.7f, 6.0f});
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudnnDestroy(handle));
    fclose(g_dump);
    return 0;
  }
  ConvGraph(handle, 0);
  Attention(handle, 1, Attn{2, 4, 2, 5, 7, 8}, /*fused=*/true);
  Attention(handle, 2, Attn{1, 2, 2, 6, 6, 8}, /*fused=*/false);
  PaddedAttention(handle, 3, Attn{3, 2, 2, 6, 7, 8}, {6, 3, 4}, {7, 5, 2});
  ConvFusion(handle, 4, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  ConvFusion(handle, 5, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
  ConvFusion(handle, 6, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
  DropoutAttention(handle, 7, Attn{2, 2, 2, 6, 6, 8}, /*rng=*/false);
  ConvFusion(handle, 8, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, /*leaky=*/true);
  MaxSumExpAttention(handle, 9, Attn{2, 4, 4, 6, 7, 8}, {6, 3}, {7, 5});
  if (argc > 3 && strcmp(argv[3], "--unchecked") == 0) {
    DropoutAttention(handle, 10, Attn{2, 2, 2, 6, 6, 8}, /*rng=*/true);
    Relu(handle, 11);
    Transpose(handle, 12);
    PagedLoad(handle, 13);
  }
  CHECK(cudaStreamSynchronize(g_stream));
  CHECK(cudnnDestroy(handle));
  fclose(g_dump);
  return 0;
}
