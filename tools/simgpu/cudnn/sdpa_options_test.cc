// The RNG operation and dropout in cudnn-frontend's composite attention graph (as PyTorch's cuDNN SDPA builds it
// with dropout_p > 0: softmax, RNG Bernoulli mask with probability 1 - p, multiply, scale by 1 / (1 - p), matmul).
// The reference regenerates each mask element with its own Philox4x32-10 (written apart from simgpu's, checked on
// Random123's known-answer vectors) under the counter layout rng.h documents; the keep rate is checked
// statistically; p = 0 equals the graph without dropout bit for bit; PyTorch's attn_mask bias and the padding mask
// (sequence-length tensors, GEMM M/N/K overrides, matmul padding value) as cudnn-frontend composes them, with and
// without dropout; matmul overrides and padding on their own. Equality with a real GPU's masks is not
// checked (no GPU here; NVIDIA does not document the counter layout).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/cudnn/backend_test_util.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {
namespace {

using Desc = cudnnBackendDescriptor_t;

// Reference Philox4x32-10: one round is (L0, R0, L1, R1) -> (hi(M1 R1) ^ L0 ^ k0, lo(M1 R1), hi(M0 R0) ^ L1 ^ k1,
// lo(M0 R0)) in Random123's (R0, L0, R1, L1) = (x0, x1, x2, x3) naming.
void RefPhilox(const uint32_t in[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x[4] = {in[0], in[1], in[2], in[3]};
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; ++r) {
    const uint64_t a = static_cast<uint64_t>(x[0]) * 0xD2511F53ull;
    const uint64_t b = static_cast<uint64_t>(x[2]) * 0xCD9E8D57ull;
    const uint32_t y0 = static_cast<uint32_t>(b >> 32) ^ x[1] ^ k0;
    const uint32_t y2 = static_cast<uint32_t>(a >> 32) ^ x[3] ^ k1;
    x[0] = y0;
    x[1] = static_cast<uint32_t>(b);
    x[2] = y2;
    x[3] = static_cast<uint32_t>(a);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) out[i] = x[i];
}

double RefUniform(uint64_t seed, uint64_t offset, uint64_t element) {
  const uint64_t block = offset >> 2;
  const uint32_t ctr[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                           static_cast<uint32_t>(element), static_cast<uint32_t>(element >> 32)};
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  uint32_t out[4];
  RefPhilox(ctr, key, out);
  const float step = 2.3283064e-10f;
  return static_cast<double>(static_cast<float>(out[offset & 3]) * step + step / 2.0f);
}

TEST(CudnnRngReference, PhiloxKnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], want[4];
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    uint32_t out[4];
    RefPhilox(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.want[i]) << "word " << i;
  }
}

class CudnnRng : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS); }
  cudnnHandle_t handle_ = nullptr;
};

// Adds y = RNG(seed, offset) with a Bernoulli distribution; seed may be null (then seed_value is set on the op).
void AddBernoulli(BackendGraph* g, double keep, Desc seed, int64_t seed_value, Desc offset, Desc y) {
  Desc r = g->Make(CUDNN_BACKEND_RNG_DESCRIPTOR);
  const cudnnRngDistribution_t dist = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
  BackendGraph::Set(r, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1, &dist);
  BackendGraph::Set(r, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &keep);
  BackendGraph::Finalize(r);
  Desc op = g->Make(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR);
  BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_DESC, r);
  BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_YDESC, y);
  if (seed != nullptr) {
    BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_SEED, seed);
  } else {
    BackendGraph::Set(op, CUDNN_ATTR_OPERATION_RNG_SEED, CUDNN_TYPE_INT64, 1, &seed_value);
  }
  BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, offset);
  BackendGraph::Finalize(op);
  g->AddOperation(op);
}

struct DeviceInt64 {
  explicit DeviceInt64(int64_t v) {
    cudaMalloc(&ptr, sizeof(v));
    cudaMemcpy(ptr, &v, sizeof(v), cudaMemcpyHostToDevice);
  }
  ~DeviceInt64() { cudaFree(ptr); }
  void* ptr = nullptr;
};

const std::vector<int64_t> kOnes = {1, 1, 1, 1};
const double kUnwritten = 7.0;  // O's value before a padded run: rows past seq_len_q stay unwritten

std::vector<double> RunMask(cudnnHandle_t handle, const std::vector<int64_t>& dims, double keep, int64_t seed,
                            int64_t offset, bool seed_tensor) {
  BackendGraph g;
  Desc seed_desc = seed_tensor ? g.Tensor(1, CUDNN_DATA_INT64, kOnes, kOnes) : nullptr;
  Desc offset_desc = g.Tensor(2, CUDNN_DATA_INT64, kOnes, kOnes);
  Desc y = g.Tensor(3, CUDNN_DATA_FLOAT, dims, Tensor::Packed(dims, false));
  AddBernoulli(&g, keep, seed_desc, seed, offset_desc, y);
  Tensor out(CUDNN_DATA_FLOAT, dims, Tensor::Packed(dims, false));
  DeviceInt64 seed_dev(seed), offset_dev(offset);
  EXPECT_EQ(g.Build(handle), CUDNN_STATUS_SUCCESS);
  std::map<int64_t, void*> data = {{2, offset_dev.ptr}, {3, out.device()}};
  if (seed_tensor) data[1] = seed_dev.ptr;
  EXPECT_EQ(g.Execute(handle, data), CUDNN_STATUS_SUCCESS);
  cudaDeviceSynchronize();
  out.Download();
  return out.values();
}

TEST_F(CudnnRng, BernoulliMaskMatchesReferenceAndKeepRate) {
  const std::vector<int64_t> dims = {2, 3, 32, 64};
  const double keep = 0.8;
  const int64_t seed = 0x123456789abcdefll, offset = 6;
  const std::vector<double> mask = RunMask(handle_, dims, keep, seed, offset, true);
  int64_t kept = 0, differ = 0;
  for (size_t e = 0; e < mask.size(); ++e) {
    const double want = RefUniform(static_cast<uint64_t>(seed), offset, e) < keep ? 1.0 : 0.0;
    differ += mask[e] != want;
    kept += mask[e] == 1.0;
  }
  EXPECT_EQ(differ, 0) << "of " << mask.size();
  const double n = static_cast<double>(mask.size()), sigma = std::sqrt(n * keep * (1 - keep));
  EXPECT_LT(std::fabs(static_cast<double>(kept) - n * keep), 5 * sigma) << kept << " kept of " << n;
  EXPECT_EQ(RunMask(handle_, dims, keep, seed, offset, false), mask) << "host seed value differs from seed tensor";
  EXPECT_NE(RunMask(handle_, dims, keep, seed, offset + 1, true), mask) << "the offset changes nothing";
  EXPECT_NE(RunMask(handle_, dims, keep, seed + 1, offset, true), mask) << "the seed changes nothing";
  for (double v : RunMask(handle_, dims, 1.0, seed, offset, true)) ASSERT_EQ(v, 1.0);
}

TEST_F(CudnnRng, SeedAndOffsetMustBeScalars) {
  BackendGraph g;
  Desc offset = g.Tensor(2, CUDNN_DATA_INT64, {2, 1, 1, 1}, {1, 1, 1, 1});
  Desc y = g.Tensor(3, CUDNN_DATA_FLOAT, {1, 1, 4, 4}, {16, 16, 4, 1});
  Desc r = g.Make(CUDNN_BACKEND_RNG_DESCRIPTOR);
  const cudnnRngDistribution_t dist = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
  const double keep = 0.5;
  const int64_t seed = 1;
  BackendGraph::Set(r, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1, &dist);
  BackendGraph::Set(r, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &keep);
  BackendGraph::Finalize(r);
  Desc op = g.Make(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR);
  BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_DESC, r);
  BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_YDESC, y);
  BackendGraph::Set(op, CUDNN_ATTR_OPERATION_RNG_SEED, CUDNN_TYPE_INT64, 1, &seed);
  BackendGraph::SetDesc(op, CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, offset);
  EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_BAD_PARAM);
  Desc bad = g.Make(CUDNN_BACKEND_RNG_DESCRIPTOR);
  const double two = 2.0;
  BackendGraph::Set(bad, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &two);
  EXPECT_EQ(cudnnBackendFinalize(bad), CUDNN_STATUS_BAD_PARAM);
}

TEST_F(CudnnRng, MatmulOverridesAndPadding) {
  // Per batch: M, N and K overrides; integers, so every order of summation is exact.
  const std::vector<int32_t> m_over = {2, 3}, n_over = {5, 1}, k_over = {4, 2};
  Tensor a(CUDNN_DATA_FLOAT, {2, 3, 4}, {12, 4, 1}), b(CUDNN_DATA_FLOAT, {2, 4, 5}, {20, 5, 1});
  std::mt19937 rng(3);
  a.Fill(&rng, true);
  b.Fill(&rng, true);
  a.Upload();
  b.Upload();
  std::vector<int32_t> over;
  for (const auto* v : {&m_over, &n_over, &k_over}) over.insert(over.end(), v->begin(), v->end());
  void* over_dev = nullptr;
  cudaMalloc(&over_dev, over.size() * sizeof(int32_t));
  cudaMemcpy(over_dev, over.data(), over.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
  for (bool padded : {false, true}) {
    SCOPED_TRACE(padded ? "padding value -3" : "no padding value");
    BackendGraph g;
    const std::vector<int64_t> od = {2, 1, 1}, os = {1, 1, 1};
    Desc ad = g.Tensor(1, CUDNN_DATA_FLOAT, a.dims(), a.strides()), bd = g.Tensor(2, CUDNN_DATA_FLOAT, b.dims(),
                                                                                   b.strides());
    Desc cd = g.Tensor(3, CUDNN_DATA_FLOAT, {2, 3, 5}, {15, 5, 1});
    Desc md = g.Tensor(4, CUDNN_DATA_INT32, od, os), nd = g.Tensor(5, CUDNN_DATA_INT32, od, os),
         kd = g.Tensor(6, CUDNN_DATA_INT32, od, os);
    const double pad = -3.0;
    g.Matmul(ad, bd, cd, md, nd, kd, padded ? &pad : nullptr);
    Tensor c(CUDNN_DATA_FLOAT, {2, 3, 5}, {15, 5, 1});
    for (size_t i = 0; i < c.size(); ++i) c.Set(i, kUnwritten);
    c.Upload();
    ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
    char* base = static_cast<char*>(over_dev);
    ASSERT_EQ(g.Execute(handle_, {{1, a.device()}, {2, b.device()}, {3, c.device()}, {4, base},
                                  {5, base + 2 * sizeof(int32_t)}, {6, base + 4 * sizeof(int32_t)}}),
              CUDNN_STATUS_SUCCESS);
    cudaDeviceSynchronize();
    c.Download();
    for (size_t bi = 0; bi < 2; ++bi) {
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 5; ++j) {
          double want = padded ? pad : kUnwritten;
          if (i < m_over[bi] && j < n_over[bi]) {
            want = 0.0;
            for (int64_t p = 0; p < k_over[bi]; ++p) {
              want += a.at(bi * 12 + static_cast<size_t>(i * 4 + p)) * b.at(bi * 20 + static_cast<size_t>(p * 5 + j));
            }
          }
          EXPECT_EQ(c.at(bi * 15 + static_cast<size_t>(i * 5 + j)), want) << bi << " " << i << " " << j;
        }
      }
    }
  }
  cudaFree(over_dev);
}

// ---- dropout inside cudnn-frontend's composite attention ----

struct Shape {
  int64_t b, h, sq, skv, d;
};

// Non-causal composite attention; with dropout (keep < 0 means none) P = softmax * mask * (1 / keep); with
// `masks`, as cudnn-frontend adds PyTorch's attn_mask bias and the padding mask: S = S * scale + bias
// ([1, h, sq, skv], uid 10), then S where (row < seq_len_q[b] and col < seq_len_kv[b]) else FLOAT's lowest
// (seq_len tensors [b, 1, 1, 1] INT32, uids 11 and 12; the constant uid 13); the first matmul then has M and N
// overrides seq_len_q and seq_len_kv with padding value 0, the second M and K overrides seq_len_q and seq_len_kv.
void BuildAttention(BackendGraph* g, const Shape& s, cudnnDataType_t io, double keep, bool masks = false) {
  auto packed = [](const std::vector<int64_t>& d) { return Tensor::Packed(d, false); };
  const std::vector<int64_t> qd = {s.b, s.h, s.sq, s.d}, kd = {s.b, s.h, s.skv, s.d};
  const std::vector<int64_t> ks = packed(kd);
  Desc q = g->Tensor(1, io, qd, packed(qd));
  Desc kt = g->Tensor(2, io, {s.b, s.h, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
  Desc v = g->Tensor(3, io, kd, ks);
  Desc o = g->Tensor(4, io, qd, packed(qd));
  Desc scale = g->Tensor(6, CUDNN_DATA_FLOAT, kOnes, kOnes, false, true);
  const std::vector<int64_t> sd = {s.b, s.h, s.sq, s.skv}, ss = packed(sd);
  const std::vector<int64_t> rd = {s.b, s.h, s.sq, 1}, rs = {s.h * s.sq, s.sq, 1, 1};
  Desc s1 = g->Tensor(101, CUDNN_DATA_FLOAT, sd, ss, true), s2 = g->Tensor(102, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc mx = g->Tensor(107, CUDNN_DATA_FLOAT, rd, rs, true), sub = g->Tensor(108, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc ex = g->Tensor(109, CUDNN_DATA_FLOAT, sd, ss, true), sum = g->Tensor(110, CUDNN_DATA_FLOAT, rd, rs, true);
  const std::vector<int64_t> bl = {s.b, 1, 1, 1};
  Desc seq_q = masks ? g->Tensor(11, CUDNN_DATA_INT32, bl, kOnes) : nullptr;
  Desc seq_kv = masks ? g->Tensor(12, CUDNN_DATA_INT32, bl, kOnes) : nullptr;
  const double zero = 0.0;
  g->Matmul(q, kt, s1, seq_q, seq_kv, nullptr, masks ? &zero : nullptr);
  g->Pointwise(CUDNN_POINTWISE_MUL, s1, scale, s2);
  if (masks) {
    const std::vector<int64_t> bd = {1, s.h, s.sq, s.skv};
    Desc bias = g->Tensor(10, io, bd, packed(bd));
    Desc lowest = g->Tensor(13, CUDNN_DATA_FLOAT, kOnes, kOnes, false, true);
    Desc biased = g->Tensor(120, CUDNN_DATA_FLOAT, sd, ss, true);
    Desc row = g->Tensor(121, CUDNN_DATA_INT32, sd, ss, true), col = g->Tensor(122, CUDNN_DATA_INT32, sd, ss, true);
    Desc row_ok = g->Tensor(123, CUDNN_DATA_BOOLEAN, sd, ss, true);
    Desc col_ok = g->Tensor(124, CUDNN_DATA_BOOLEAN, sd, ss, true);
    Desc ok = g->Tensor(125, CUDNN_DATA_BOOLEAN, sd, ss, true);
    Desc padded = g->Tensor(126, CUDNN_DATA_FLOAT, sd, ss, true);
    g->Pointwise(CUDNN_POINTWISE_ADD, s2, bias, biased);
    g->Pointwise(CUDNN_POINTWISE_GEN_INDEX, biased, nullptr, row, nullptr, 2);
    g->Pointwise(CUDNN_POINTWISE_GEN_INDEX, biased, nullptr, col, nullptr, 3);
    g->Pointwise(CUDNN_POINTWISE_CMP_LT, row, seq_q, row_ok, nullptr, -1, CUDNN_DATA_BOOLEAN);
    g->Pointwise(CUDNN_POINTWISE_CMP_LT, col, seq_kv, col_ok, nullptr, -1, CUDNN_DATA_BOOLEAN);
    g->Pointwise(CUDNN_POINTWISE_LOGICAL_AND, row_ok, col_ok, ok, nullptr, -1, CUDNN_DATA_BOOLEAN);
    g->Pointwise(CUDNN_POINTWISE_BINARY_SELECT, biased, lowest, padded, ok);
    s2 = padded;
  }
  g->Reduction(CUDNN_REDUCE_TENSOR_MAX, s2, mx);
  g->Pointwise(CUDNN_POINTWISE_SUB, s2, mx, sub);
  g->Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  g->Reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sum);
  if (keep < 0) {
    Desc p = g->Tensor(112, io, sd, ss, true);
    g->Pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
    g->Matmul(p, v, o, seq_q, nullptr, seq_kv, nullptr);
    return;
  }
  Desc p = g->Tensor(112, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc mask = g->Tensor(113, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc dropped = g->Tensor(114, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc pd = g->Tensor(115, io, sd, ss, true);
  Desc seed = g->Tensor(7, CUDNN_DATA_INT64, kOnes, kOnes), offset = g->Tensor(8, CUDNN_DATA_INT64, kOnes, kOnes);
  Desc inv_keep = g->Tensor(9, CUDNN_DATA_FLOAT, kOnes, kOnes, false, true);
  g->Pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
  AddBernoulli(g, keep, seed, 0, offset, mask);
  g->Pointwise(CUDNN_POINTWISE_MUL, p, mask, dropped);
  g->Pointwise(CUDNN_POINTWISE_MUL, dropped, inv_keep, pd);
  g->Matmul(pd, v, o, seq_q, nullptr, seq_kv, nullptr);
}

std::vector<double> RunAttention(cudnnHandle_t handle, const Shape& s, cudnnDataType_t io, double keep,
                                 const Tensor& q, const Tensor& k, const Tensor& v, float scale, int64_t seed,
                                 int64_t offset, const Tensor* bias = nullptr, const std::vector<int32_t>& seq_q = {},
                                 const std::vector<int32_t>& seq_kv = {}) {
  BackendGraph g;
  BuildAttention(&g, s, io, keep, bias != nullptr);
  Tensor o(io, {s.b, s.h, s.sq, s.d}, Tensor::Packed({s.b, s.h, s.sq, s.d}, false));
  DeviceInt64 seed_dev(seed), offset_dev(offset);
  float inv_keep = keep > 0 ? static_cast<float>(1.0 / keep) : 1.0f;
  EXPECT_EQ(g.Build(handle), CUDNN_STATUS_SUCCESS);
  std::map<int64_t, void*> data = {{1, q.device()}, {2, k.device()}, {3, v.device()}, {4, o.device()},
                                   {6, &scale},     {7, seed_dev.ptr}, {8, offset_dev.ptr}, {9, &inv_keep}};
  if (keep < 0) data.erase(7), data.erase(8), data.erase(9);
  void *seq_q_dev = nullptr, *seq_kv_dev = nullptr;
  float lowest = -std::numeric_limits<float>::max();
  if (bias != nullptr) {
    for (size_t i = 0; i < o.size(); ++i) o.Set(i, kUnwritten);
    o.Upload();
    cudaMalloc(&seq_q_dev, seq_q.size() * sizeof(int32_t));
    cudaMalloc(&seq_kv_dev, seq_kv.size() * sizeof(int32_t));
    cudaMemcpy(seq_q_dev, seq_q.data(), seq_q.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
    cudaMemcpy(seq_kv_dev, seq_kv.data(), seq_kv.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
    data[10] = bias->device();
    data[11] = seq_q_dev;
    data[12] = seq_kv_dev;
    data[13] = &lowest;
  }
  EXPECT_EQ(g.Execute(handle, data), CUDNN_STATUS_SUCCESS);
  cudaDeviceSynchronize();
  cudaFree(seq_q_dev);
  cudaFree(seq_kv_dev);
  o.Download();
  std::vector<double> bytes_as_values;
  for (size_t i = 0; i < o.size(); ++i) bytes_as_values.push_back(o.at(i));
  return bytes_as_values;
}

// Checks O against an FP64 reference: scores S = Q K^T * scale (+ bias, then FLOAT's lowest outside the padding
// mask when bias is set; rows past seq_len_q must then be unwritten), softmax, dropout with keep probability
// `keep` (none when keep < 0). Returns the number of dropped scores.
int CheckAttention(const Shape& s, cudnnDataType_t io, const std::vector<double>& got, const Tensor& q,
                   const Tensor& k, const Tensor& v, float scale, double keep, int64_t seed, int64_t offset,
                   const Tensor* bias = nullptr, const std::vector<int32_t>& seq_q = {},
                   const std::vector<int32_t>& seq_kv = {}) {
  const double uio = UnitRoundoff(io);
  int failures = 0, dropped = 0;
  for (int64_t bh = 0; bh < s.b * s.h; ++bh) {
    const int64_t bi = bh / s.h, h = bh % s.h;
    for (int64_t i = 0; i < s.sq; ++i) {
      std::vector<double> p(static_cast<size_t>(s.skv));
      double mx = -INFINITY, l = 0.0;
      for (int64_t j = 0; j < s.skv; ++j) {
        double dot = 0.0;
        for (int64_t c = 0; c < s.d; ++c) {
          dot += q.at(static_cast<size_t>((bh * s.sq + i) * s.d + c)) *
                 k.at(static_cast<size_t>((bh * s.skv + j) * s.d + c));
        }
        double x = dot * scale;
        if (bias != nullptr) {
          x += bias->at(static_cast<size_t>((h * s.sq + i) * s.skv + j));
          if (!(i < seq_q[static_cast<size_t>(bi)] && j < seq_kv[static_cast<size_t>(bi)])) {
            x = -std::numeric_limits<float>::max();
          }
        }
        p[static_cast<size_t>(j)] = x;
        mx = std::max(mx, x);
      }
      for (double& x : p) l += (x = std::exp(x - mx));
      for (int64_t j = 0; j < s.skv; ++j) {
        const uint64_t e = static_cast<uint64_t>((bh * s.sq + i) * s.skv + j);
        const bool kept = keep < 0 || RefUniform(seed, offset, e) < keep;
        dropped += !kept;
        p[static_cast<size_t>(j)] = kept ? p[static_cast<size_t>(j)] / l / (keep < 0 ? 1.0 : keep) : 0.0;
      }
      if (bias != nullptr && i >= seq_q[static_cast<size_t>(bi)]) {
        for (int64_t c = 0; c < s.d; ++c) {
          EXPECT_EQ(got[static_cast<size_t>((bh * s.sq + i) * s.d + c)], kUnwritten) << "row past seq_len_q";
        }
        continue;
      }
      for (int64_t c = 0; c < s.d && failures < 5; ++c) {
        double want = 0.0, mag = 0.0;
        for (int64_t j = 0; j < s.skv; ++j) {
          const double vv = v.at(static_cast<size_t>((bh * s.skv + j) * s.d + c));
          want += p[static_cast<size_t>(j)] * vv;
          mag += p[static_cast<size_t>(j)] * std::fabs(vv);
        }
        // P is rounded to the I/O type (uio), O too; the FP32 steps add far less than 2 uio relative.
        const double tol = 4 * uio * mag + 1e-6;
        const size_t at = static_cast<size_t>((bh * s.sq + i) * s.d + c);
        if (!(std::fabs(got[at] - want) <= tol)) {
          ADD_FAILURE() << "O element " << at << ": " << got[at] << " vs " << want << " tol " << tol;
          ++failures;
        }
      }
    }
  }
  return dropped;
}

void FillQkv(Tensor* q, Tensor* k, Tensor* v, unsigned seed) {
  std::mt19937 rng(seed);
  for (Tensor* t : {q, k, v}) {
    t->Fill(&rng, false);
    t->Upload();
  }
}

TEST_F(CudnnRng, DropoutAttentionMatchesReference) {
  const Shape s = {2, 2, 6, 9, 16};
  const float scale = 0.25f;
  const int64_t seed = 987654321, offset = 13;
  for (cudnnDataType_t io : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
    SCOPED_TRACE(::testing::Message() << "io " << io);
    Tensor q(io, {s.b, s.h, s.sq, s.d}, Tensor::Packed({s.b, s.h, s.sq, s.d}, false));
    Tensor k(io, {s.b, s.h, s.skv, s.d}, Tensor::Packed({s.b, s.h, s.skv, s.d}, false));
    Tensor v(io, {s.b, s.h, s.skv, s.d}, Tensor::Packed({s.b, s.h, s.skv, s.d}, false));
    FillQkv(&q, &k, &v, 21);
    // p = 0 (keep probability 1): bit for bit the graph without dropout.
    EXPECT_EQ(RunAttention(handle_, s, io, 1.0, q, k, v, scale, seed, offset),
              RunAttention(handle_, s, io, -1.0, q, k, v, scale, seed, offset));
    const double keep = 0.7;
    const std::vector<double> got = RunAttention(handle_, s, io, keep, q, k, v, scale, seed, offset);
    EXPECT_GT(CheckAttention(s, io, got, q, k, v, scale, keep, seed, offset), 0);
  }
}

TEST_F(CudnnRng, BiasAndPaddingMaskWithDropoutMatchReference) {
  const Shape s = {2, 2, 6, 9, 16};
  const float scale = 0.25f;
  const int64_t seed = 5, offset = 2;
  const std::vector<int32_t> seq_q = {4, 6}, seq_kv = {7, 3};
  for (cudnnDataType_t io : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
    SCOPED_TRACE(::testing::Message() << "io " << io);
    Tensor q(io, {s.b, s.h, s.sq, s.d}, Tensor::Packed({s.b, s.h, s.sq, s.d}, false));
    Tensor k(io, {s.b, s.h, s.skv, s.d}, Tensor::Packed({s.b, s.h, s.skv, s.d}, false));
    Tensor v(io, {s.b, s.h, s.skv, s.d}, Tensor::Packed({s.b, s.h, s.skv, s.d}, false));
    Tensor bias(io, {1, s.h, s.sq, s.skv}, Tensor::Packed({1, s.h, s.sq, s.skv}, false));
    FillQkv(&q, &k, &v, 33);
    std::mt19937 rng(34);
    bias.Fill(&rng, false);
    bias.Upload();
    for (double keep : {-1.0, 0.75}) {
      const std::vector<double> got =
          RunAttention(handle_, s, io, keep, q, k, v, scale, seed, offset, &bias, seq_q, seq_kv);
      CheckAttention(s, io, got, q, k, v, scale, keep, seed, offset, &bias, seq_q, seq_kv);
    }
  }
}

}  // namespace
}  // namespace simgpu::cudnn::testing
