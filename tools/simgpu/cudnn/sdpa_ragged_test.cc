// Ragged (packed variable-length) attention, as PyTorch's nested-tensor SDPA runs it (ragged_test_util.h): the
// fused SDPA operation with sequence lengths against an FP64 reference, the composite graph cudnn-frontend builds
// with a padding mask against the fused operation bit for bit, ragged against padded dense layouts bit for bit,
// INT32 and INT64 offsets, nothing written past a buffer's end, and the statuses of graphs simgpu cannot run.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/cudnn/backend_test_util.h"
#include "tools/simgpu/cudnn/ragged_test_util.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {
namespace {

using Desc = cudnnBackendDescriptor_t;

class CudnnRagged : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS); }
  cudnnHandle_t handle_ = nullptr;
};

// cudnn-frontend's composite attention with a padding mask over the ragged tensors: S = (Q K^T with M and N
// overrides seq_len_q and seq_len_kv, padding value 0) * scale; S where (row < seq_len_q and col < seq_len_kv)
// else FLOAT's lowest; softmax through MAX, SUB, EXP, ADD reduction and DIV to the I/O type; O = P V with M and K
// overrides; Stats = max + log(sum).
void BuildRaggedComposite(BackendGraph* g, const RaggedCase& c, bool with_stats) {
  const RaggedDescs t = RaggedTensors(g, c, with_stats);
  const std::vector<int64_t> ones = {1, 1, 1, 1};
  const int64_t b = c.b(), h = c.h, sq = c.max_q, skv = c.max_kv;
  const std::vector<int64_t> sd = {b, h, sq, skv}, ss = {h * sq * skv, sq * skv, skv, 1};
  const std::vector<int64_t> rd = {b, h, sq, 1}, rs = {h * sq, sq, 1, 1};
  auto virt = [&](int64_t uid, cudnnDataType_t type, bool row) {
    return g->Tensor(uid, type, row ? rd : sd, row ? rs : ss, true);
  };
  const double zero = 0.0;
  Desc s1 = virt(101, CUDNN_DATA_FLOAT, false), s2 = virt(102, CUDNN_DATA_FLOAT, false);
  g->Matmul(t.q, t.kt, s1, t.seq_q, t.seq_kv, nullptr, &zero);
  g->Pointwise(CUDNN_POINTWISE_MUL, s1, t.scale, s2);
  Desc lowest = g->Tensor(kLowest, CUDNN_DATA_FLOAT, ones, ones, false, true);
  Desc row = virt(121, CUDNN_DATA_INT32, false), col = virt(122, CUDNN_DATA_INT32, false);
  Desc row_ok = virt(123, CUDNN_DATA_BOOLEAN, false), col_ok = virt(124, CUDNN_DATA_BOOLEAN, false);
  Desc ok = virt(125, CUDNN_DATA_BOOLEAN, false), masked = virt(126, CUDNN_DATA_FLOAT, false);
  g->Pointwise(CUDNN_POINTWISE_GEN_INDEX, s2, nullptr, row, nullptr, 2);
  g->Pointwise(CUDNN_POINTWISE_GEN_INDEX, s2, nullptr, col, nullptr, 3);
  g->Pointwise(CUDNN_POINTWISE_CMP_LT, row, t.seq_q, row_ok, nullptr, -1, CUDNN_DATA_BOOLEAN);
  g->Pointwise(CUDNN_POINTWISE_CMP_LT, col, t.seq_kv, col_ok, nullptr, -1, CUDNN_DATA_BOOLEAN);
  g->Pointwise(CUDNN_POINTWISE_LOGICAL_AND, row_ok, col_ok, ok, nullptr, -1, CUDNN_DATA_BOOLEAN);
  g->Pointwise(CUDNN_POINTWISE_BINARY_SELECT, s2, lowest, masked, ok);
  Desc mx = virt(107, CUDNN_DATA_FLOAT, true), sub = virt(108, CUDNN_DATA_FLOAT, false);
  Desc ex = virt(109, CUDNN_DATA_FLOAT, false), sum = virt(110, CUDNN_DATA_FLOAT, true);
  Desc p = virt(112, c.io, false);
  g->Reduction(CUDNN_REDUCE_TENSOR_MAX, masked, mx);
  g->Pointwise(CUDNN_POINTWISE_SUB, masked, mx, sub);
  g->Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  g->Reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sum);
  g->Pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
  g->Matmul(p, t.v, t.o, t.seq_q, nullptr, t.seq_kv);
  if (with_stats) {
    Desc lg = virt(130, CUDNN_DATA_FLOAT, true);
    g->Pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
    g->Pointwise(CUDNN_POINTWISE_ADD, mx, lg, t.stats);
  }
}

// Executes a ragged graph on fresh outputs (every byte 0xA5 before) and downloads O and Stats.
void RunRagged(cudnnHandle_t handle, BackendGraph* g, RaggedData* data, bool with_stats) {
  ASSERT_EQ(g->Build(handle), CUDNN_STATUS_SUCCESS);
  float scale = 0.25f, lowest = -std::numeric_limits<float>::max();
  char why[256] = "";
  const cudnnStatus_t st = g->Execute(handle, data->Pack(&scale, &lowest, with_stats));
  if (st != CUDNN_STATUS_SUCCESS) cudnnGetLastErrorString(why, sizeof why);
  ASSERT_EQ(st, CUDNN_STATUS_SUCCESS) << why;
  data->o.Download();
  data->stats.Download();
}

// FP64 reference of the ragged attention: for each sequence n, row i < seq_q[n] and head hh, keys j < seq_kv[n].
// O is within 4 u_io sum_j P_j |V_j| + 1e-6 (P rounded to the I/O type, then O; the FP32 steps add far less);
// Stats (natural log-sum-exp of the scaled scores) within 8 (d + s_kv) u_fp32 (1 + |Stats| + max_j |score_j|),
// the score sums' and the exponential sum's FP32 rounding.
void CheckReference(const RaggedCase& c, const RaggedData& data, bool with_stats) {
  const double uio = UnitRoundoff(c.io), u32 = UnitRoundoff(CUDNN_DATA_FLOAT);
  const std::vector<int64_t> cq = RaggedCase::Cumulative(c.seq_q), ckv = RaggedCase::Cumulative(c.seq_kv);
  const int64_t group = c.h / c.hk;
  int failures = 0;
  for (int64_t n = 0; n < c.b(); ++n) {
    if (c.seq_kv[static_cast<size_t>(n)] == 0) continue;  // softmax over no key: undefined (fused = composite)
    for (int64_t i = 0; i < c.seq_q[static_cast<size_t>(n)]; ++i) {
      for (int64_t hh = 0; hh < c.h; ++hh) {
        const int64_t kh = hh / group, keys = c.seq_kv[static_cast<size_t>(n)];
        std::vector<double> p(static_cast<size_t>(keys));
        double mx = -INFINITY, l = 0.0, biggest = 0.0;
        for (int64_t j = 0; j < keys; ++j) {
          double dot = 0.0;
          for (int64_t e = 0; e < c.d; ++e) {
            dot += data.q.at(static_cast<size_t>(((cq[n] + i) * c.h + hh) * c.d + e)) *
                   data.k.at(static_cast<size_t>(((ckv[n] + j) * c.hk + kh) * c.d + e));
          }
          p[static_cast<size_t>(j)] = dot * c.scale;
          mx = std::max(mx, dot * c.scale);
          biggest = std::max(biggest, std::fabs(dot * c.scale));
        }
        for (double& x : p) l += (x = std::exp(x - mx));
        if (with_stats) {
          const double want = mx + std::log(l);
          const double got = data.stats.at(static_cast<size_t>((cq[n] + i) * c.h + hh));
          const double tol = 8.0 * static_cast<double>(c.d + c.max_kv) * u32 * (1.0 + std::fabs(want) + biggest);
          if (!(std::fabs(got - want) <= tol) && failures++ < 5) {
            ADD_FAILURE() << "Stats of sequence " << n << " row " << i << " head " << hh << ": " << got << " vs "
                          << want;
          }
        }
        for (int64_t e = 0; e < c.d; ++e) {
          double want = 0.0, mag = 0.0;
          for (int64_t j = 0; j < keys; ++j) {
            const double vv = data.v.at(static_cast<size_t>(((ckv[n] + j) * c.hk + kh) * c.d + e));
            want += p[static_cast<size_t>(j)] / l * vv;
            mag += p[static_cast<size_t>(j)] / l * std::fabs(vv);
          }
          const double got = data.o.at(static_cast<size_t>(((cq[n] + i) * c.h + hh) * c.d + e));
          if (!(std::fabs(got - want) <= 4 * uio * mag + 1e-6) && failures++ < 5) {
            ADD_FAILURE() << "O of sequence " << n << " row " << i << " head " << hh << " dim " << e << ": " << got
                          << " vs " << want;
          }
        }
      }
    }
  }
  EXPECT_TRUE(data.o.guards_untouched()) << "O written past its end";
  EXPECT_TRUE(data.stats.guards_untouched()) << "Stats written past its end";
}

TEST_F(CudnnRagged, FusedMatchesReference) {
  for (cudnnDataType_t io : {CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF}) {
    for (bool with_stats : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "io " << io << " stats " << with_stats);
      RaggedCase c;
      c.io = io;
      c.offsets = io == CUDNN_DATA_HALF ? CUDNN_DATA_INT64 : CUDNN_DATA_INT32;
      RaggedData data(c, 7);
      BackendGraph g;
      BuildRaggedFused(&g, c, with_stats);
      RunRagged(handle_, &g, &data, with_stats);
      CheckReference(c, data, with_stats);
      if (!with_stats) {
        for (size_t i = 0; i < data.stats.size(); ++i) ASSERT_TRUE(data.stats.untouched(i)) << "Stats written";
      }
    }
  }
}

TEST_F(CudnnRagged, CompositeEqualsFusedBitwise) {
  RaggedCase c;
  c.seq_q = {3, 20, 1, 11};  // a full-length sequence and a single token
  c.seq_kv = {24, 5, 1, 13};
  RaggedData fused(c, 11), composite(c, 11);
  BackendGraph gf, gc;
  BuildRaggedFused(&gf, c, true);
  BuildRaggedComposite(&gc, c, true);
  RunRagged(handle_, &gf, &fused, true);
  RunRagged(handle_, &gc, &composite, true);
  CheckReference(c, composite, true);
  EXPECT_EQ(fused.o.bytes(), composite.o.bytes());
  EXPECT_EQ(fused.stats.bytes(), composite.stats.bytes());
}

// Random shapes and lengths, empty sequences and full ones included: fused and composite agree bit for bit, both
// match the reference, and nothing is written past any buffer.
TEST_F(CudnnRagged, RandomShapesAndLengths) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 24; ++trial) {
    RaggedCase c;
    c.io = trial % 2 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    c.offsets = trial % 3 ? CUDNN_DATA_INT32 : CUDNN_DATA_INT64;
    const int64_t b = 1 + static_cast<int64_t>(rng() % 4);
    c.hk = 1 + static_cast<int64_t>(rng() % 2);
    c.h = c.hk * (1 + static_cast<int64_t>(rng() % 3));
    c.d = trial % 4 ? 8 : 16;
    c.max_q = 1 + static_cast<int64_t>(rng() % 12);
    c.max_kv = 1 + static_cast<int64_t>(rng() % 12);
    c.seq_q.clear();
    c.seq_kv.clear();
    for (int64_t n = 0; n < b; ++n) {
      c.seq_q.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(c.max_q + 1)));
      c.seq_kv.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(c.max_kv + 1)));
    }
    if (c.tokens_q() == 0) c.seq_q[0] = c.max_q;
    if (c.tokens_kv() == 0) c.seq_kv[0] = c.max_kv;
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " b " << b << " h " << c.h << "/" << c.hk << " s "
                                      << c.max_q << "x" << c.max_kv);
    RaggedData fused(c, 100 + trial), composite(c, 100 + trial);
    BackendGraph gf, gc;
    BuildRaggedFused(&gf, c, true);
    BuildRaggedComposite(&gc, c, true);
    RunRagged(handle_, &gf, &fused, true);
    RunRagged(handle_, &gc, &composite, true);
    EXPECT_EQ(fused.o.bytes(), composite.o.bytes());
    EXPECT_EQ(fused.stats.bytes(), composite.stats.bytes());
    CheckReference(c, fused, true);
  }
}

// The same sequences in a padded [b, h, s_max, d] layout (BHSD, dense) with sequence lengths: the rows both
// layouts hold are bitwise equal, and the padded layout's rows past a sequence stay unwritten.
TEST_F(CudnnRagged, RaggedEqualsPaddedDense) {
  RaggedCase c;
  c.io = CUDNN_DATA_HALF;
  RaggedData ragged(c, 5);
  BackendGraph gr;
  BuildRaggedFused(&gr, c, true);
  RunRagged(handle_, &gr, &ragged, true);

  const int64_t b = c.b(), h = c.h, hk = c.hk, d = c.d, sq = c.max_q, skv = c.max_kv;
  const std::vector<int64_t> cq = RaggedCase::Cumulative(c.seq_q), ckv = RaggedCase::Cumulative(c.seq_kv);
  Buffer q(c.io, static_cast<size_t>(b * h * sq * d)), k(c.io, static_cast<size_t>(b * hk * skv * d));
  Buffer v(c.io, static_cast<size_t>(b * hk * skv * d)), o(c.io, static_cast<size_t>(b * h * sq * d));
  Buffer stats(CUDNN_DATA_FLOAT, static_cast<size_t>(b * h * sq));
  for (size_t i = 0; i < q.size(); ++i) q.Set(i, 0.0);
  for (size_t i = 0; i < k.size(); ++i) k.Set(i, 0.0), v.Set(i, 0.0);
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t hh = 0; hh < h; ++hh) {
      for (int64_t i = 0; i < c.seq_q[static_cast<size_t>(n)]; ++i) {
        for (int64_t e = 0; e < d; ++e) {
          q.Set(static_cast<size_t>(((n * h + hh) * sq + i) * d + e),
                ragged.q.at(static_cast<size_t>(((cq[n] + i) * h + hh) * d + e)));
        }
      }
    }
    for (int64_t hh = 0; hh < hk; ++hh) {
      for (int64_t j = 0; j < c.seq_kv[static_cast<size_t>(n)]; ++j) {
        for (int64_t e = 0; e < d; ++e) {
          const size_t from = static_cast<size_t>(((ckv[n] + j) * hk + hh) * d + e);
          k.Set(static_cast<size_t>(((n * hk + hh) * skv + j) * d + e), ragged.k.at(from));
          v.Set(static_cast<size_t>(((n * hk + hh) * skv + j) * d + e), ragged.v.at(from));
        }
      }
    }
  }
  for (Buffer* t : {&q, &k, &v}) t->Upload();
  BackendGraph g;
  const std::vector<int64_t> ones = {1, 1, 1, 1};
  Desc qt = g.Tensor(kQ, c.io, {b, h, sq, d}, {h * sq * d, sq * d, d, 1});
  Desc kt = g.Tensor(kK, c.io, {b, hk, skv, d}, {hk * skv * d, skv * d, d, 1});
  Desc vt = g.Tensor(kV, c.io, {b, hk, skv, d}, {hk * skv * d, skv * d, d, 1});
  Desc ot = g.Tensor(kO, c.io, {b, h, sq, d}, {h * sq * d, sq * d, d, 1});
  Desc st = g.Tensor(kStats, CUDNN_DATA_FLOAT, {b, h, sq, 1}, {h * sq, sq, 1, 1});
  Desc scale = g.Tensor(kScale, CUDNN_DATA_FLOAT, ones, ones, false, true);
  Desc lq = g.Tensor(kSeqQ, CUDNN_DATA_INT32, {b, 1, 1, 1}, ones);
  Desc lkv = g.Tensor(kSeqKv, CUDNN_DATA_INT32, {b, 1, 1, 1}, ones);
  g.Sdpa(qt, kt, vt, ot, st, scale, lq, lkv);
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  float scale_value = c.scale;
  ASSERT_EQ(g.Execute(handle_, {{kQ, q.device()},
                                {kK, k.device()},
                                {kV, v.device()},
                                {kO, o.device()},
                                {kStats, stats.device()},
                                {kScale, &scale_value},
                                {kSeqQ, ragged.seq_q.device()},
                                {kSeqKv, ragged.seq_kv.device()}}),
            CUDNN_STATUS_SUCCESS);
  o.Download();
  stats.Download();
  const size_t ob = Bytes(c.io);
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t hh = 0; hh < h; ++hh) {
      for (int64_t i = 0; i < sq; ++i) {
        const bool held = i < c.seq_q[static_cast<size_t>(n)];
        const size_t ps = static_cast<size_t>((n * h + hh) * sq + i);
        if (!held) {
          EXPECT_TRUE(stats.untouched(ps)) << "padded Stats row written";
          for (int64_t e = 0; e < d; ++e) EXPECT_TRUE(o.untouched(ps * d + e)) << "padded O row written";
          continue;
        }
        const size_t rs = static_cast<size_t>((cq[n] + i) * h + hh);
        EXPECT_EQ(0, std::memcmp(&stats.bytes()[ps * 4], &ragged.stats.bytes()[rs * 4], 4));
        EXPECT_EQ(0, std::memcmp(&o.bytes()[ps * d * ob], &ragged.o.bytes()[rs * d * ob], d * ob))
            << "sequence " << n << " head " << hh << " row " << i;
      }
    }
  }
}

// A graph simgpu accepts but cannot run gets no engine; a variant pack without a ragged offset tensor's pointer is
// rejected at execution.
TEST_F(CudnnRagged, UnsupportedAndMissingOffsets) {
  RaggedCase c;
  {
    // A virtual ragged tensor (the scores of Q K^T declared ragged).
    BackendGraph g;
    const RaggedDescs t = RaggedTensors(&g, c, false);
    const std::vector<int64_t> ones = {1, 1, 1, 1};
    Desc off = g.Tensor(90, CUDNN_DATA_INT32, {c.b() + 1, 1, 1, 1}, ones);
    const std::vector<int64_t> dims = {c.b(), c.h, c.max_q, c.max_kv};
    Desc virt = g.Tensor(91, CUDNN_DATA_FLOAT, dims, {INT_MAX, c.max_kv, c.h * c.max_kv, 1}, true, false, off);
    g.Matmul(t.q, t.kt, virt);
    Desc out = g.Tensor(92, CUDNN_DATA_FLOAT, dims, {c.h * c.max_q * c.max_kv, c.max_q * c.max_kv, c.max_kv, 1});
    g.Pointwise(CUDNN_POINTWISE_IDENTITY, virt, nullptr, out);
    EXPECT_EQ(g.Build(handle_), CUDNN_STATUS_NOT_SUPPORTED);
    EXPECT_EQ(g.configs(), 0);
  }
  {
    BackendGraph g;
    BuildRaggedFused(&g, c, true);
    RaggedData data(c, 3);
    ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
    float scale = 0.25f, lowest = 0.0f;
    std::map<int64_t, void*> pack = data.Pack(&scale, &lowest, true);
    pack.erase(kLowest);
    pack.erase(kRagStats);
    EXPECT_EQ(g.Execute(handle_, pack), CUDNN_STATUS_BAD_PARAM);
    pack[kRagStats] = data.rag_stats.device();
    EXPECT_EQ(g.Execute(handle_, pack), CUDNN_STATUS_SUCCESS);
    cudaDeviceSynchronize();
  }
}

}  // namespace
}  // namespace simgpu::cudnn::testing
