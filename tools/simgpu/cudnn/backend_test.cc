// The backend API end to end: convolution graphs equal the legacy calls bit for bit (one arithmetic, one order);
// scaled dot-product attention, as cudnn-frontend composes it (matmul, scale, causal mask from index comparisons,
// max/sub/exp/sum/div softmax, matmul) and as the fused SDPA operation, against an FP64 reference within a
// derived bound, and the two forms bitwise equal; pointwise and reduction operations; execution's status codes.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/cudnn/backend_test_util.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {
namespace {

using Desc = cudnnBackendDescriptor_t;

class CudnnBackend : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS); }
  cudnnHandle_t handle_ = nullptr;
};

// ---- convolution: backend graph == legacy call ----

void LegacyConv(cudnnHandle_t h, Kind kind, const ConvCase& cc, const Tensor& x, const Tensor& w, const Tensor& y,
                bool nhwc, float alpha, float beta) {
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateTensorDescriptor(&yd);
  cudnnCreateFilterDescriptor(&wd);
  cudnnCreateConvolutionDescriptor(&cd);
  auto set = [](cudnnTensorDescriptor_t d, const Tensor& t) {
    std::vector<int> dims(t.dims().begin(), t.dims().end()), strides(t.strides().begin(), t.strides().end());
    EXPECT_EQ(cudnnSetTensorNdDescriptor(d, t.type(), static_cast<int>(dims.size()), dims.data(), strides.data()),
              CUDNN_STATUS_SUCCESS);
  };
  set(xd, x);
  set(yd, y);
  std::vector<int> wdims(w.dims().begin(), w.dims().end());
  EXPECT_EQ(cudnnSetFilterNdDescriptor(wd, w.type(), nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                       static_cast<int>(wdims.size()), wdims.data()),
            CUDNN_STATUS_SUCCESS);
  std::vector<int> pad(cc.pad.begin(), cc.pad.end()), str(cc.stride.begin(), cc.stride.end()),
      dil(cc.dilation.begin(), cc.dilation.end());
  EXPECT_EQ(cudnnSetConvolutionNdDescriptor(cd, static_cast<int>(pad.size()), pad.data(), str.data(), dil.data(),
                                            cc.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnSetConvolutionGroupCount(cd, static_cast<int>(cc.groups)), CUDNN_STATUS_SUCCESS);
  cudnnStatus_t st;
  if (kind == Kind::kForward) {
    st = cudnnConvolutionForward(h, &alpha, xd, x.device(), wd, w.device(), cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                 nullptr, 0, &beta, yd, y.device());
  } else if (kind == Kind::kBackwardData) {
    st = cudnnConvolutionBackwardData(h, &alpha, wd, w.device(), yd, y.device(), cd,
                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &beta, xd, x.device());
  } else {
    st = cudnnConvolutionBackwardFilter(h, &alpha, xd, x.device(), yd, y.device(), cd,
                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &beta, wd, w.device());
  }
  EXPECT_EQ(st, CUDNN_STATUS_SUCCESS);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
}

TEST_F(CudnnBackend, ConvolutionGraphsEqualLegacyCalls) {
  const ConvCase cases[] = {{2, 4, 6, 2, {6, 5}, {3, 3}, {1, 1}, {2, 1}, {1, 1}},
                            {1, 3, 2, 1, {7, 7}, {3, 2}, {1, 0}, {1, 2}, {2, 1}, true}};
  const cudnnBackendDescriptorType_t types[] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                                CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                                CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
  const Kind kinds[] = {Kind::kForward, Kind::kBackwardData, Kind::kBackwardFilter};
  uint32_t seed = 11;
  for (const ConvCase& cc : cases) {
    for (cudnnDataType_t type : {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
      for (bool nhwc : {false, true}) {
        for (int kind = 0; kind < 3; ++kind) {
          SCOPED_TRACE(::testing::Message() << "type " << type << " nhwc " << nhwc << " kind " << kind);
          Tensor x(type, cc.XDims(), Tensor::Packed(cc.XDims(), nhwc));
          Tensor w(type, cc.WDims(), Tensor::Packed(cc.WDims(), nhwc));
          Tensor y(type, cc.YDims(), Tensor::Packed(cc.YDims(), nhwc));
          Tensor x2(type, cc.XDims(), Tensor::Packed(cc.XDims(), nhwc));
          Tensor w2(type, cc.WDims(), Tensor::Packed(cc.WDims(), nhwc));
          Tensor y2(type, cc.YDims(), Tensor::Packed(cc.YDims(), nhwc));
          std::mt19937 rng(seed++);
          x.Fill(&rng, false);
          w.Fill(&rng, false);
          y.Fill(&rng, false);
          for (size_t i = 0; i < x.size(); ++i) x2.Set(i, x.at(i));
          for (size_t i = 0; i < w.size(); ++i) w2.Set(i, w.at(i));
          for (size_t i = 0; i < y.size(); ++i) y2.Set(i, y.at(i));
          for (Tensor* t : {&x, &w, &y, &x2, &w2, &y2}) t->Upload();
          LegacyConv(handle_, kinds[kind], cc, x, w, y, nhwc, 1.25f, 0.5f);

          BackendGraph g;
          Desc xt = g.Tensor(1, type, x.dims(), x.strides());
          Desc wt = g.Tensor(2, type, w.dims(), w.strides());
          Desc yt = g.Tensor(3, type, y.dims(), y.strides());
          g.Convolution(types[kind], xt, wt, yt, cc.pad, cc.stride, cc.dilation,
                        cc.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT, 1.25f, 0.5f);
          ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
          EXPECT_EQ(g.WorkspaceSize(), 0);
          ASSERT_EQ(g.Execute(handle_, {{1, x2.device()}, {2, w2.device()}, {3, y2.device()}}), CUDNN_STATUS_SUCCESS);
          Tensor& a = kind == 0 ? y : kind == 1 ? x : w;
          Tensor& b = kind == 0 ? y2 : kind == 1 ? x2 : w2;
          a.Download();
          b.Download();
          int differ = 0;
          for (size_t i = 0; i < a.size(); ++i) differ += a.ElementBytes(i) != b.ElementBytes(i);
          EXPECT_EQ(differ, 0) << "of " << a.size() << " elements";
        }
      }
    }
  }
}

// ---- attention ----

struct AttnShape {
  int64_t b, h, hk, sq, skv, d;
};

// FP64 reference: O = softmax(scale * Q K^T [causal: keys j <= i]) V and stats = logsumexp of the scaled scores.
void ReferenceAttention(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                        bool causal, std::vector<double>* o, std::vector<double>* stats, std::vector<double>* pv_abs,
                        std::vector<double>* score_err) {
  o->assign(static_cast<size_t>(s.b * s.h * s.sq * s.d), 0.0);
  stats->assign(static_cast<size_t>(s.b * s.h * s.sq), 0.0);
  pv_abs->assign(o->size(), 0.0);
  score_err->assign(stats->size(), 0.0);
  const int64_t group = s.h / s.hk;
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t h = 0; h < s.h; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < s.sq; ++i) {
        std::vector<double> sc(static_cast<size_t>(s.skv), -INFINITY);
        double mx = -INFINITY, err = 0.0;
        for (int64_t j = 0; j < s.skv; ++j) {
          if (causal && j > i) continue;
          double dot = 0.0, abs = 0.0;
          for (int64_t c = 0; c < s.d; ++c) {
            const double p = q.at(static_cast<size_t>(((bi * s.h + h) * s.sq + i) * s.d + c)) *
                             k.at(static_cast<size_t>(((bi * s.hk + hk) * s.skv + j) * s.d + c));
            dot += p;
            abs += std::fabs(p);
          }
          sc[static_cast<size_t>(j)] = dot * scale;
          err = std::max(err, Gamma(s.d + 2, std::ldexp(1.0, -24)) * abs * scale);
          mx = std::max(mx, dot * scale);
        }
        double l = 0.0;
        for (int64_t j = 0; j < s.skv; ++j) l += std::exp(sc[static_cast<size_t>(j)] - mx);
        const size_t row = static_cast<size_t>((bi * s.h + h) * s.sq + i);
        (*stats)[row] = mx + std::log(l);
        (*score_err)[row] = err;
        for (int64_t c = 0; c < s.d; ++c) {
          double acc = 0.0, abs = 0.0;
          for (int64_t j = 0; j < s.skv; ++j) {
            const double p = std::exp(sc[static_cast<size_t>(j)] - mx) / l;
            const double vv = v.at(static_cast<size_t>(((bi * s.hk + hk) * s.skv + j) * s.d + c));
            acc += p * vv;
            abs += p * std::fabs(vv);
          }
          (*o)[row * static_cast<size_t>(s.d) + static_cast<size_t>(c)] = acc;
          (*pv_abs)[row * static_cast<size_t>(s.d) + static_cast<size_t>(c)] = abs;
        }
      }
    }
  }
}

std::vector<int64_t> Packed4(const std::vector<int64_t>& dims) { return Tensor::Packed(dims, false); }

// The composite graph of cudnn-frontend's SDPA forward (K given transposed as KT = [b, hk, d, skv] through
// swapped strides, as the frontend does).
void BuildComposite(BackendGraph* g, const AttnShape& s, cudnnDataType_t io, bool causal) {
  const std::vector<int64_t> qd = {s.b, s.h, s.sq, s.d}, kd = {s.b, s.hk, s.skv, s.d};
  const std::vector<int64_t> ks = Packed4(kd);
  Desc q = g->Tensor(1, io, qd, Packed4(qd));
  Desc kt = g->Tensor(2, io, {s.b, s.hk, s.d, s.skv}, {ks[0], ks[1], ks[3], ks[2]});
  Desc v = g->Tensor(3, io, kd, ks);
  Desc o = g->Tensor(4, io, qd, Packed4(qd));
  Desc stats = g->Tensor(5, CUDNN_DATA_FLOAT, {s.b, s.h, s.sq, 1}, {s.h * s.sq, s.sq, 1, 1});
  Desc scale = g->Tensor(6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  const std::vector<int64_t> sd = {s.b, s.h, s.sq, s.skv}, ss = Packed4(sd);
  const std::vector<int64_t> rd = {s.b, s.h, s.sq, 1}, rs = {s.h * s.sq, s.sq, 1, 1};
  Desc s1 = g->Tensor(101, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc s2 = g->Tensor(102, CUDNN_DATA_FLOAT, sd, ss, true);
  g->Matmul(q, kt, s1);
  g->Pointwise(CUDNN_POINTWISE_MUL, s1, scale, s2);
  Desc masked = s2;
  if (causal) {
    Desc neg_inf = g->Tensor(7, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
    Desc row = g->Tensor(103, CUDNN_DATA_INT32, sd, ss, true);
    Desc col = g->Tensor(104, CUDNN_DATA_INT32, sd, ss, true);
    Desc keep = g->Tensor(105, CUDNN_DATA_BOOLEAN, sd, ss, true);
    masked = g->Tensor(106, CUDNN_DATA_FLOAT, sd, ss, true);
    g->Pointwise(CUDNN_POINTWISE_GEN_INDEX, s2, nullptr, row, nullptr, 2);
    g->Pointwise(CUDNN_POINTWISE_GEN_INDEX, s2, nullptr, col, nullptr, 3);
    g->Pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep, nullptr, -1, CUDNN_DATA_BOOLEAN);
    g->Pointwise(CUDNN_POINTWISE_BINARY_SELECT, s2, neg_inf, masked, keep);
  }
  Desc mx = g->Tensor(107, CUDNN_DATA_FLOAT, rd, rs, true);
  Desc sub = g->Tensor(108, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc ex = g->Tensor(109, CUDNN_DATA_FLOAT, sd, ss, true);
  Desc sum = g->Tensor(110, CUDNN_DATA_FLOAT, rd, rs, true);
  Desc lg = g->Tensor(111, CUDNN_DATA_FLOAT, rd, rs, true);
  Desc p = g->Tensor(112, io, sd, ss, true);
  g->Reduction(CUDNN_REDUCE_TENSOR_MAX, masked, mx);
  g->Pointwise(CUDNN_POINTWISE_SUB, masked, mx, sub);
  g->Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  g->Reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sum);
  g->Pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
  g->Pointwise(CUDNN_POINTWISE_ADD, mx, lg, stats);
  g->Pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
  g->Matmul(p, v, o);
}

void BuildFused(BackendGraph* g, const AttnShape& s, cudnnDataType_t io) {
  const std::vector<int64_t> qd = {s.b, s.h, s.sq, s.d}, kd = {s.b, s.hk, s.skv, s.d};
  Desc q = g->Tensor(1, io, qd, Packed4(qd));
  Desc k = g->Tensor(2, io, kd, Packed4(kd));
  Desc v = g->Tensor(3, io, kd, Packed4(kd));
  Desc o = g->Tensor(4, io, qd, Packed4(qd));
  Desc stats = g->Tensor(5, CUDNN_DATA_FLOAT, {s.b, s.h, s.sq, 1}, {s.h * s.sq, s.sq, 1, 1});
  Desc scale = g->Tensor(6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  g->Sdpa(q, k, v, o, stats, scale);
}

struct AttnRun {
  std::vector<double> o, stats;
  std::vector<std::vector<unsigned char>> o_bytes;
};

AttnRun RunAttention(cudnnHandle_t handle, const AttnShape& s, cudnnDataType_t io, bool fused, bool causal,
                     const Tensor& q, const Tensor& k, const Tensor& v, float scale) {
  const std::vector<int64_t> qd = {s.b, s.h, s.sq, s.d};
  Tensor o(io, qd, Packed4(qd));
  Tensor stats(CUDNN_DATA_FLOAT, {s.b, s.h, s.sq, 1}, {s.h * s.sq, s.sq, 1, 1});
  const float neg_inf = -INFINITY;
  BackendGraph g;
  if (fused) {
    BuildFused(&g, s, io);
  } else {
    BuildComposite(&g, s, io, causal);
  }
  AttnRun run;
  EXPECT_EQ(g.Build(handle), CUDNN_STATUS_SUCCESS);
  if (::testing::Test::HasFailure()) return run;
  std::map<int64_t, void*> data = {{1, q.device()},     {2, k.device()}, {3, v.device()}, {4, o.device()},
                                   {5, stats.device()}, {6, &scale}};
  if (causal) data[7] = const_cast<float*>(&neg_inf);
  EXPECT_EQ(g.Execute(handle, data), CUDNN_STATUS_SUCCESS);
  o.Download();
  stats.Download();
  run.o = o.values();
  run.stats = stats.values();
  for (size_t i = 0; i < o.size(); ++i) run.o_bytes.push_back(o.ElementBytes(i));
  return run;
}

void CheckAgainstReference(const AttnShape& s, const AttnRun& run, const Tensor& q, const Tensor& k,
                           const Tensor& v, float scale, bool causal, cudnnDataType_t io) {
  std::vector<double> o, stats, pv_abs, score_err;
  ReferenceAttention(s, q, k, v, scale, causal, &o, &stats, &pv_abs, &score_err);
  const double u32 = std::ldexp(1.0, -24), uio = UnitRoundoff(io);
  int failures = 0;
  for (size_t row = 0; row < stats.size() && failures < 5; ++row) {
    // Scores are off by at most e (FP32 dot products), so exp(S_j - m) / l is off by a relative 4e plus the FP32
    // roundings of sub, exp, sum (skv terms) and div; P is then rounded to the I/O type (uio).
    const double e = score_err[row];
    const double rel_p = 4 * e + Gamma(s.skv + 8, u32) + uio;
    const double stats_tol = 2 * e + Gamma(s.skv + 8, u32) * (std::fabs(stats[row]) + 1.0);
    if (!(std::fabs(run.stats[row] - stats[row]) <= stats_tol)) {
      ADD_FAILURE() << "stats row " << row << ": " << run.stats[row] << " vs " << stats[row];
      ++failures;
    }
    for (int64_t c = 0; c < s.d; ++c) {
      const size_t i = row * static_cast<size_t>(s.d) + static_cast<size_t>(c);
      const double acc = pv_abs[i] * (rel_p + Gamma(s.skv, u32) * (1 + rel_p));
      const double tol = acc + uio * (std::fabs(o[i]) + acc);
      if (!(std::fabs(run.o[i] - o[i]) <= tol)) {
        ADD_FAILURE() << "O element " << i << ": " << run.o[i] << " vs " << o[i] << " tol " << tol;
        ++failures;
      }
    }
  }
}

TEST_F(CudnnBackend, CompositeAttentionMatchesReference) {
  const AttnShape s = {2, 2, 2, 7, 7, 16};
  for (cudnnDataType_t io : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "io " << io << " causal " << causal);
      Tensor q(io, {s.b, s.h, s.sq, s.d}, Packed4({s.b, s.h, s.sq, s.d}));
      Tensor k(io, {s.b, s.hk, s.skv, s.d}, Packed4({s.b, s.hk, s.skv, s.d}));
      Tensor v(io, {s.b, s.hk, s.skv, s.d}, Packed4({s.b, s.hk, s.skv, s.d}));
      std::mt19937 rng(causal ? 5 : 6);
      for (Tensor* t : {&q, &k, &v}) {
        t->Fill(&rng, false);
        t->Upload();
      }
      const float scale = 0.25f;
      const AttnRun run = RunAttention(handle_, s, io, false, causal, q, k, v, scale);
      CheckAgainstReference(s, run, q, k, v, scale, causal, io);
      if (causal) {
        // The first query row sees only key 0: its output is V's row 0 (rounded through P = 1).
        for (int64_t c = 0; c < s.d; ++c) EXPECT_EQ(run.o[static_cast<size_t>(c)], v.at(static_cast<size_t>(c)));
      }
    }
  }
}

TEST_F(CudnnBackend, FusedAttentionMatchesReferenceAndCompositeBitwise) {
  const AttnShape shapes[] = {{2, 2, 2, 7, 7, 16}, {1, 4, 2, 5, 9, 8}};  // the second with grouped-query heads
  for (const AttnShape& s : shapes) {
    for (cudnnDataType_t io : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
      SCOPED_TRACE(::testing::Message() << "io " << io << " heads " << s.h << "/" << s.hk);
      Tensor q(io, {s.b, s.h, s.sq, s.d}, Packed4({s.b, s.h, s.sq, s.d}));
      Tensor k(io, {s.b, s.hk, s.skv, s.d}, Packed4({s.b, s.hk, s.skv, s.d}));
      Tensor v(io, {s.b, s.hk, s.skv, s.d}, Packed4({s.b, s.hk, s.skv, s.d}));
      std::mt19937 rng(9);
      for (Tensor* t : {&q, &k, &v}) {
        t->Fill(&rng, false);
        t->Upload();
      }
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
      const AttnRun fused = RunAttention(handle_, s, io, true, false, q, k, v, scale);
      CheckAgainstReference(s, fused, q, k, v, scale, false, io);
      const AttnRun composite = RunAttention(handle_, s, io, false, false, q, k, v, scale);
      int differ = 0;
      for (size_t i = 0; i < fused.o_bytes.size(); ++i) differ += fused.o_bytes[i] != composite.o_bytes[i];
      EXPECT_EQ(differ, 0) << "of " << fused.o_bytes.size() << " output elements";
      EXPECT_EQ(fused.stats, composite.stats);
    }
  }
}

// The fused SDPA forward with page tables (cudnn-frontend's set_paged_attention_k_table / _v_table): K and V are
// containers of blocks, each sequence's rows found through its table; the result is bitwise the unpaged fused SDPA's
// over the same rows (and so the composite graph's with paged cache loads). Table entries past a sequence's length
// are never read; an entry outside the container reads NaN into its sequence's rows only. Without sequence lengths,
// or with a table of another type or shape, finalization fails.
TEST_F(CudnnBackend, PagedFusedAttentionGathersRowsThroughThePageTables) {
  const int64_t b = 2, h = 4, hk = 2, sq = 3, d = 8, bs = 2, n = 4, skv = n * bs, blocks = b * n + 1;
  const cudnnDataType_t io = CUDNN_DATA_HALF;
  const std::vector<int64_t> qd = {b, h, sq, d}, kd = {b, hk, skv, d}, cd = {blocks, hk, bs, d};
  Tensor q(io, qd, Packed4(qd)), k(io, kd, Packed4(kd)), v(io, kd, Packed4(kd));
  Tensor kc(io, cd, Packed4(cd)), vc(io, cd, Packed4(cd));
  std::mt19937 rng(23);
  for (Tensor* t : {&q, &k, &v, &kc, &vc}) t->Fill(&rng, false);
  // Each sequence's blocks at shuffled container blocks (K's and V's tables differ); entries past sequence 1's
  // length (3 keys: blocks 0 and 1) are garbage the kernel must not read.
  std::vector<int32_t> kt = {5, 0, 8, 3, 2, 7, -9, 1000}, vt = {1, 6, 4, 0, 8, 3, 77, -1};
  const std::vector<int32_t> len_q = {3, 2}, len_kv = {7, 3};
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < len_kv[static_cast<size_t>(i)]; ++j) {
      for (int64_t hh = 0; hh < hk; ++hh) {
        for (int64_t c = 0; c < d; ++c) {
          const size_t from = static_cast<size_t>(((i * hk + hh) * skv + j) * d + c);
          auto to = [&](const std::vector<int32_t>& t) {
            return static_cast<size_t>(((t[static_cast<size_t>(i * n + j / bs)] * hk + hh) * bs + j % bs) * d + c);
          };
          kc.Set(to(kt), k.at(from));
          vc.Set(to(vt), v.at(from));
        }
      }
    }
  }
  for (Tensor* t : {&q, &k, &v, &kc, &vc}) t->Upload();
  auto ints = [](const std::vector<int32_t>& x) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, x.size() * 4), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    return p;
  };
  void *lq = ints(len_q), *lkv = ints(len_kv);
  const float scale = 0.3f;
  struct Out {
    std::vector<std::vector<unsigned char>> o;
    std::vector<double> stats;
  };
  // paged: K and V from the containers through tables kt_dev / vt_dev.
  auto run = [&](bool paged, void* kt_dev, void* vt_dev) {
    Out out;
    Tensor o(io, qd, Packed4(qd)), stats(CUDNN_DATA_FLOAT, {b, h, sq, 1}, {h * sq, sq, 1, 1});
    o.Upload(), stats.Upload();
    BackendGraph g;
    const std::vector<int64_t>& kvd = paged ? cd : kd;
    Desc qt = g.Tensor(1, io, qd, Packed4(qd)), ktd = g.Tensor(2, io, kvd, Packed4(kvd));
    Desc vtd = g.Tensor(3, io, kvd, Packed4(kvd)), ot = g.Tensor(4, io, qd, Packed4(qd));
    Desc st = g.Tensor(5, CUDNN_DATA_FLOAT, {b, h, sq, 1}, {h * sq, sq, 1, 1});
    Desc sc = g.Tensor(6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
    Desc lqt = g.Tensor(7, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1});
    Desc lkvt = g.Tensor(8, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1});
    Desc op = g.Make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    for (const auto& [attr, t] : {std::pair{CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, qt},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, ktd},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, vtd},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, ot},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, st},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, sc},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, lqt},
                                  {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, lkvt}}) {
      g.SetDesc(op, attr, t);
    }
    if (paged) {
      g.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC,
                g.Tensor(9, CUDNN_DATA_INT32, {b, 1, n, 1}, {n, n, 1, 1}));
      g.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_VDESC,
                g.Tensor(10, CUDNN_DATA_INT32, {b, 1, n, 1}, {n, n, 1, 1}));
    }
    EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_SUCCESS);
    g.AddOperation(op);
    EXPECT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
    std::map<int64_t, void*> data = {{1, q.device()}, {2, paged ? kc.device() : k.device()},
                                     {3, paged ? vc.device() : v.device()}, {4, o.device()}, {5, stats.device()},
                                     {6, const_cast<float*>(&scale)}, {7, lq}, {8, lkv}};
    if (paged) data[9] = kt_dev, data[10] = vt_dev;
    EXPECT_EQ(g.Execute(handle_, data), CUDNN_STATUS_SUCCESS);
    o.Download(), stats.Download();
    for (size_t i = 0; i < o.size(); ++i) out.o.push_back(o.ElementBytes(i));
    out.stats = stats.values();
    return out;
  };
  auto written = [&](size_t i) {  // O's element i (or stats row i / d) lies in a query row below seq_len_q
    const int64_t row = static_cast<int64_t>(i) / d;
    return row % sq < len_q[static_cast<size_t>(row / (h * sq))];
  };
  void *ktd = ints(kt), *vtd = ints(vt);
  const Out plain = run(false, nullptr, nullptr);
  ASSERT_FALSE(HasFailure());
  const Out paged = run(true, ktd, vtd);
  ASSERT_FALSE(HasFailure());
  int compared = 0;
  for (size_t i = 0; i < plain.o.size(); ++i) {
    if (!written(i)) continue;
    ++compared;
    EXPECT_EQ(paged.o[i], plain.o[i]) << "O element " << i;
    const size_t row = i / static_cast<size_t>(d);
    if (i % static_cast<size_t>(d) == 0) EXPECT_EQ(paged.stats[row], plain.stats[row]) << "stats row " << row;
  }
  EXPECT_EQ(compared, (3 + 2) * h * d);
  // Sequence 0's V block 2 (keys 4 and 5) moved outside the container: its rows read NaN, sequence 1's do not.
  std::vector<int32_t> moved = vt;
  moved[2] = static_cast<int32_t>(blocks);
  void* mvd = ints(moved);
  const Out bad = run(true, ktd, mvd);
  int nan = 0;
  for (size_t i = 0; i < plain.o.size(); ++i) {
    if (!written(i)) continue;
    const bool seq0 = static_cast<int64_t>(i) / d / (h * sq) == 0;
    const double o = Decode(io, bad.o[i].data());
    if (seq0) nan += std::isnan(o);
    else EXPECT_EQ(bad.o[i], plain.o[i]) << i;
  }
  EXPECT_EQ(nan, 3 * h * d);

  // Finalization: a page table without sequence lengths, or of FLOAT, or of another batch, is BAD_PARAM.
  BackendGraph f;
  Desc qt = f.Tensor(1, io, qd, Packed4(qd)), ct = f.Tensor(2, io, cd, Packed4(cd));
  Desc ot = f.Tensor(4, io, qd, Packed4(qd));
  Desc lqt = f.Tensor(7, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1});
  Desc good = f.Tensor(9, CUDNN_DATA_INT32, {b, 1, n, 1}, {n, n, 1, 1});
  Desc floats = f.Tensor(10, CUDNN_DATA_FLOAT, {b, 1, n, 1}, {n, n, 1, 1});
  Desc other_batch = f.Tensor(11, CUDNN_DATA_INT32, {b + 1, 1, n, 1}, {n, n, 1, 1});
  for (const auto& [table, lengths] : {std::pair{good, false}, {floats, true}, {other_batch, true}}) {
    Desc op = f.Make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, qt);
    f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, ct);
    f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, ct);
    f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, ot);
    f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC, table);
    f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_VDESC, good);
    if (lengths) {
      f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, lqt);
      f.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, lqt);
    }
    EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_BAD_PARAM);
  }
  for (void* p : {lq, lkv, ktd, vtd, mvd}) cudaFree(p);
}

// ---- pointwise and reduction ----

TEST_F(CudnnBackend, PointwiseBroadcastAndReduction) {
  // y = relu(x * b + 1) with b broadcast over rows; r = sum over the last axis of y; m = max over all of x.
  const std::vector<int64_t> xd = {1, 2, 3, 4}, bd = {1, 2, 1, 4}, rd = {1, 2, 3, 1};
  Tensor x(CUDNN_DATA_FLOAT, xd, Packed4(xd));
  Tensor b(CUDNN_DATA_HALF, bd, Packed4(bd));
  Tensor y(CUDNN_DATA_BFLOAT16, xd, Packed4(xd));
  Tensor r(CUDNN_DATA_FLOAT, rd, Packed4(rd));
  Tensor m(CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1});
  std::mt19937 rng(3);
  x.Fill(&rng, false);
  b.Fill(&rng, false);
  x.Upload();
  b.Upload();
  const float one = 1.0f;
  BackendGraph g;
  Desc xt = g.Tensor(1, CUDNN_DATA_FLOAT, xd, x.strides());
  Desc bt = g.Tensor(2, CUDNN_DATA_HALF, bd, b.strides());
  Desc yt = g.Tensor(3, CUDNN_DATA_BFLOAT16, xd, y.strides());
  Desc rt = g.Tensor(4, CUDNN_DATA_FLOAT, rd, r.strides());
  Desc mt = g.Tensor(5, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1});
  Desc ot = g.Tensor(6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  Desc prod = g.Tensor(100, CUDNN_DATA_FLOAT, xd, x.strides(), true);
  Desc plus = g.Tensor(101, CUDNN_DATA_FLOAT, xd, x.strides(), true);
  g.Pointwise(CUDNN_POINTWISE_MUL, xt, bt, prod);
  g.Pointwise(CUDNN_POINTWISE_ADD, prod, ot, plus);
  g.Pointwise(CUDNN_POINTWISE_RELU_FWD, plus, nullptr, yt);
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, yt, rt);
  g.Reduction(CUDNN_REDUCE_TENSOR_MAX, xt, mt);
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(g.Execute(handle_, {{1, x.device()}, {2, b.device()}, {3, y.device()}, {4, r.device()},
                                {5, m.device()}, {6, const_cast<float*>(&one)}}),
            CUDNN_STATUS_SUCCESS);
  y.Download();
  r.Download();
  m.Download();
  double mx = -INFINITY;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i / 12, col = i % 4;
    const float pf = static_cast<float>(x.at(i)) * static_cast<float>(b.at(c * 4 + col));
    const float plus_f = pf + 1.0f;
    const float relu = plus_f > 0.0f ? plus_f : 0.0f;
    Tensor expect(CUDNN_DATA_BFLOAT16, {1}, {1});
    expect.Set(0, relu);
    EXPECT_EQ(y.at(i), expect.at(0)) << i;
    mx = std::max(mx, x.at(i));
  }
  for (size_t row = 0; row < r.size(); ++row) {
    float sum = 0.0f;
    for (size_t c = 0; c < 4; ++c) sum += static_cast<float>(y.at(row * 4 + c));
    EXPECT_EQ(r.at(row), sum) << row;
  }
  EXPECT_EQ(m.at(0), mx);
}

// cudnn-frontend's softmax with a sink token (graph_build.cc: ReducesInto): an identity MAX reduction of the scores
// [1, 2, 3, 5] (its output keeps the input's shape), then a pointwise MAX of it and a per-head sink [1, 2, 1, 1] into
// the row maxima [1, 2, 3, 1]: each is max(max over the row, sink). MIN likewise; other modes refuse the operand.
TEST_F(CudnnBackend, PointwiseMaxOfALargerOperandReducesIntoTheOutput) {
  const std::vector<int64_t> sd = {1, 2, 3, 5}, kd = {1, 2, 1, 1}, md = {1, 2, 3, 1};
  Tensor s(CUDNN_DATA_FLOAT, sd, Packed4(sd)), sink(CUDNN_DATA_FLOAT, kd, Packed4(kd));
  Tensor m(CUDNN_DATA_FLOAT, md, Packed4(md));
  std::mt19937 rng(11);
  s.Fill(&rng, false);
  sink.Set(0, 10.0);   // above every score (in [-2, 2)): the sink wins head 0's MAX, the rows its MIN
  sink.Set(1, -10.0);  // below every score: the rows win head 1's MAX, the sink its MIN
  s.Upload();
  sink.Upload();
  for (cudnnPointwiseMode_t mode : {CUDNN_POINTWISE_MAX, CUDNN_POINTWISE_MIN, CUDNN_POINTWISE_ADD}) {
    BackendGraph g;
    Desc st = g.Tensor(1, CUDNN_DATA_FLOAT, sd, s.strides());
    Desc kt = g.Tensor(2, CUDNN_DATA_FLOAT, kd, sink.strides());
    Desc mt = g.Tensor(3, CUDNN_DATA_FLOAT, md, m.strides());
    Desc same = g.Tensor(100, CUDNN_DATA_FLOAT, sd, s.strides(), true);
    g.Reduction(mode == CUDNN_POINTWISE_MIN ? CUDNN_REDUCE_TENSOR_MIN : CUDNN_REDUCE_TENSOR_MAX, st, same);
    g.Pointwise(mode, same, kt, mt);
    if (mode == CUDNN_POINTWISE_ADD) {
      EXPECT_NE(g.Build(handle_), CUDNN_STATUS_SUCCESS) << "ADD of a larger operand has no reading";
      continue;
    }
    ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS) << mode;
    ASSERT_EQ(g.Execute(handle_, {{1, s.device()}, {2, sink.device()}, {3, m.device()}}), CUDNN_STATUS_SUCCESS);
    m.Download();
    int sink_won = 0, row_won = 0;
    for (size_t row = 0; row < m.size(); ++row) {
      const double k = sink.at(row / 3);
      double want = k;
      bool row_wins = false;
      for (size_t j = 0; j < 5; ++j) {
        const double v = s.at(row * 5 + j);
        if (mode == CUDNN_POINTWISE_MAX ? v > want : v < want) want = v, row_wins = true;
      }
      (row_wins ? row_won : sink_won) += 1;
      EXPECT_EQ(m.at(row), want) << "mode " << mode << " row " << row;
    }
    EXPECT_GT(sink_won, 0) << mode;  // both branches taken
    EXPECT_GT(row_won, 0) << mode;
  }
}

// Backward activations take x (forward input) and dy, write dx: dx = dy * f'(x).
TEST_F(CudnnBackend, BackwardActivations) {
  const std::vector<int64_t> d = {1, 1, 4, 4};
  Tensor x(CUDNN_DATA_FLOAT, d, Packed4(d)), dy(CUDNN_DATA_FLOAT, d, Packed4(d));
  std::mt19937 rng(4);
  x.Fill(&rng, false);
  dy.Fill(&rng, false);
  x.Upload();
  dy.Upload();
  const struct {
    cudnnPointwiseMode_t mode;
    double (*derivative)(double);
  } modes[] = {{CUDNN_POINTWISE_RELU_BWD, [](double v) { return v > 0 ? 1.0 : 0.0; }},
               {CUDNN_POINTWISE_SIGMOID_BWD, [](double v) {
                  const double s = 1 / (1 + std::exp(-v));
                  return s * (1 - s);
                }},
               {CUDNN_POINTWISE_TANH_BWD, [](double v) { return 1 - std::tanh(v) * std::tanh(v); }}};
  for (const auto& m : modes) {
    SCOPED_TRACE(m.mode);
    Tensor dx(CUDNN_DATA_FLOAT, d, Packed4(d));
    BackendGraph g;
    Desc xt = g.Tensor(1, CUDNN_DATA_FLOAT, d, x.strides());
    Desc dyt = g.Tensor(2, CUDNN_DATA_FLOAT, d, dy.strides());
    Desc dxt = g.Tensor(3, CUDNN_DATA_FLOAT, d, dx.strides());
    Desc pw = g.Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    g.Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m.mode);
    g.Finalize(pw);
    Desc op = g.Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, xt);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, dyt);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, dxt);
    g.Finalize(op);
    g.AddOperation(op);
    ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(g.Execute(handle_, {{1, x.device()}, {2, dy.device()}, {3, dx.device()}}), CUDNN_STATUS_SUCCESS);
    dx.Download();
    for (size_t i = 0; i < dx.size(); ++i) {
      const double expect = dy.at(i) * m.derivative(x.at(i));
      EXPECT_NEAR(dx.at(i), expect, 1e-6 * (std::fabs(expect) + 1)) << i;
    }
  }
}

// Reshape as cudnn-frontend's attention backward uses it: the last two dimensions and strides swapped (a transpose
// of the same memory), FP32 into FP16; into a virtual tensor that a pointwise copy reads, and into user memory.
TEST_F(CudnnBackend, ReshapeViewsItsInput) {
  const std::vector<int64_t> xd = {1, 2, 3, 4}, td = {1, 2, 4, 3}, ts = {24, 12, 1, 4};
  Tensor x(CUDNN_DATA_FLOAT, xd, Packed4(xd));
  std::mt19937 rng(5);
  x.Fill(&rng, false);
  x.Upload();
  Tensor copied(CUDNN_DATA_HALF, td, Packed4(td));  // identity of the virtual transpose, packed
  Tensor direct(CUDNN_DATA_HALF, td, ts);           // the transpose written to memory: x's offsets
  BackendGraph g;
  Desc xt = g.Tensor(1, CUDNN_DATA_FLOAT, xd, x.strides());
  Desc vt = g.Tensor(100, CUDNN_DATA_HALF, td, ts, true);
  Desc ct = g.Tensor(2, CUDNN_DATA_HALF, td, copied.strides());
  Desc dt = g.Tensor(3, CUDNN_DATA_HALF, td, ts);
  g.Reshape(xt, vt);
  g.Pointwise(CUDNN_POINTWISE_IDENTITY, vt, nullptr, ct);
  g.Reshape(xt, dt);
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(g.Execute(handle_, {{1, x.device()}, {2, copied.device()}, {3, direct.device()}}), CUDNN_STATUS_SUCCESS);
  copied.Download();
  direct.Download();
  size_t i = 0;
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < 3; ++c, ++i) {
        Tensor expect(CUDNN_DATA_HALF, {1}, {1});
        expect.Set(0, x.at(static_cast<size_t>((h * 3 + c) * 4 + r)));  // x[h, c, r]
        EXPECT_EQ(copied.at(i), expect.at(0)) << i;
        EXPECT_EQ(direct.at(i), expect.at(0)) << i;
      }
    }
  }

  // Finalization keeps the element count; a reshape reaching past its input's memory has no engine.
  BackendGraph bad;
  Desc small = bad.Tensor(4, CUDNN_DATA_FLOAT, {1, 1, 2, 2}, {4, 4, 2, 1});
  Desc big = bad.Tensor(5, CUDNN_DATA_FLOAT, {1, 1, 2, 3}, {6, 6, 3, 1});
  Desc op = bad.Make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  bad.SetDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, small);
  bad.SetDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, big);
  EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_BAD_PARAM);
  BackendGraph past;
  Desc in = past.Tensor(6, CUDNN_DATA_FLOAT, {1, 1, 2, 2}, {4, 4, 2, 1});
  Desc out = past.Tensor(7, CUDNN_DATA_FLOAT, {1, 1, 2, 2}, {8, 8, 4, 1});
  past.Reshape(in, out);
  EXPECT_EQ(past.Build(handle_), CUDNN_STATUS_NOT_SUPPORTED);
}

// A paged cache load (graph_kernels.h) into y [b, h, s, d] and into the transposed [b, h, d, s] cudnn-frontend
// passes for K^T: each sequence's row j is its page table's block j / block size, row j % block size, of the
// container; rows past the sequence length are +0 and never read the table (batch 1's last entry is garbage); a
// page index outside the container reads NaN; shapes that disagree fail finalization.
TEST_F(CudnnBackend, PagedCacheLoadGathersBlocksThroughThePageTable) {
  const int64_t blocks = 6, h = 2, bs = 2, d = 3, b = 2, n = 3, s = 6;
  std::vector<float> container(static_cast<size_t>(blocks * h * bs * d));
  for (size_t i = 0; i < container.size(); ++i) container[i] = static_cast<float>(i) + 0.5f;
  // Sequence 0: blocks 4, 0, 7 (7 is outside the container: only row 4 reads it, length 5); sequence 1: blocks
  // 2, 5 and a garbage entry past its length 3.
  const std::vector<int32_t> table = {4, 0, 7, 2, 5, -123456}, lens = {5, 3};
  void *cdev = nullptr, *tdev = nullptr, *ldev = nullptr, *ydev = nullptr, *ytdev = nullptr;
  const size_t ybytes = static_cast<size_t>(b * h * s * d) * 4;
  ASSERT_EQ(cudaMalloc(&cdev, container.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&tdev, table.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ldev, lens.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ydev, ybytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ytdev, ybytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(cdev, container.data(), container.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(tdev, table.data(), table.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(ldev, lens.data(), lens.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<float> junk(static_cast<size_t>(b * h * s * d), 99.0f);
  ASSERT_EQ(cudaMemcpy(ydev, junk.data(), ybytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(ytdev, junk.data(), ybytes, cudaMemcpyHostToDevice), cudaSuccess);
  const std::vector<int64_t> cd = {blocks, h, bs, d}, yd = {b, h, s, d}, ytd = {b, h, d, s};
  BackendGraph g;
  Desc ct = g.Tensor(1, CUDNN_DATA_FLOAT, cd, Packed4(cd));
  Desc tt = g.Tensor(2, CUDNN_DATA_INT32, {b, 1, n, 1}, {n, n, 1, 1});
  Desc lt = g.Tensor(3, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1});
  Desc yt = g.Tensor(4, CUDNN_DATA_FLOAT, yd, Packed4(yd));
  Desc ytt = g.Tensor(5, CUDNN_DATA_FLOAT, ytd, {h * s * d, s * d, 1, d});  // K^T over [b, h, s, d] memory
  for (Desc y : {yt, ytt}) {
    Desc op = g.Make(CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, ct);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, tt);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, lt);
    g.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, y);
    ASSERT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_SUCCESS);
    g.AddOperation(op);
  }
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(g.Execute(handle_, {{1, cdev}, {2, tdev}, {3, ldev}, {4, ydev}, {5, ytdev}}), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> y(junk.size()), yt_mem(junk.size());
  ASSERT_EQ(cudaMemcpy(y.data(), ydev, ybytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(yt_mem.data(), ytdev, ybytes, cudaMemcpyDeviceToHost), cudaSuccess);
  int nan = 0;
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t hh = 0; hh < h; ++hh) {
      for (int64_t j = 0; j < s; ++j) {
        for (int64_t t = 0; t < d; ++t) {
          const size_t at = static_cast<size_t>(((i * h + hh) * s + j) * d + t);
          const int32_t page = table[static_cast<size_t>(i * n + j / bs)];
          if (j >= lens[static_cast<size_t>(i)]) {
            EXPECT_EQ(y[at], 0.0f) << at;
          } else if (page < 0 || page >= blocks) {
            EXPECT_TRUE(std::isnan(y[at])) << at;
            ++nan;
          } else {
            EXPECT_EQ(y[at], container[static_cast<size_t>(((page * h + hh) * bs + j % bs) * d + t)]) << at;
          }
          EXPECT_EQ(std::isnan(yt_mem[at]) ? -1.0f : yt_mem[at], std::isnan(y[at]) ? -1.0f : y[at]) << at;
        }
      }
    }
  }
  EXPECT_EQ(nan, h * d);  // sequence 0, row 4: block 7

  // A table too short for y's sequence, and sequence lengths of another shape, fail finalization.
  BackendGraph bad;
  Desc short_table = bad.Tensor(6, CUDNN_DATA_INT32, {b, 1, 2, 1}, {2, 2, 1, 1});
  Desc wide_lens = bad.Tensor(7, CUDNN_DATA_INT32, {b, 2, 1, 1}, {2, 1, 1, 1});
  for (const auto& [table_desc, len_desc] : {std::pair<Desc, Desc>{short_table, lt}, {tt, wide_lens}}) {
    Desc op = bad.Make(CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR);
    bad.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, ct);
    bad.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, table_desc);
    bad.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, len_desc);
    bad.SetDesc(op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, yt);
    EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_BAD_PARAM);
  }
  for (void* p : {cdev, tdev, ldev, ydev, ytdev}) cudaFree(p);
}

// A reduction whose output dimension divides the input's sums groups of consecutive indices (cudnn-frontend's
// grouped-query attention backward: per-query-head gradients summed into each K/V head); one that does not divide is
// BAD_PARAM (as NVIDIA's library answers the conformance transcript's 5 -> 2).
TEST_F(CudnnBackend, ReductionSumsGroupsOfHeads) {
  const std::vector<int64_t> xd = {1, 4, 2, 3}, yd = {1, 2, 2, 3};
  std::vector<float> x(24), y(12, -1.0f);
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (float& v : x) v = u(rng);
  void *xdev = nullptr, *ydev = nullptr;
  ASSERT_EQ(cudaMalloc(&xdev, 24 * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ydev, 12 * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(xdev, x.data(), 24 * 4, cudaMemcpyHostToDevice), cudaSuccess);
  BackendGraph g;
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, g.Tensor(1, CUDNN_DATA_FLOAT, xd, Packed4(xd)),
              g.Tensor(2, CUDNN_DATA_FLOAT, yd, Packed4(yd)));
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(g.Execute(handle_, {{1, xdev}, {2, ydev}}), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaMemcpy(y.data(), ydev, 12 * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int h = 0; h < 2; ++h) {
    for (int e = 0; e < 6; ++e) {
      EXPECT_EQ(y[static_cast<size_t>(h * 6 + e)], x[static_cast<size_t>(2 * h * 6 + e)] + x[static_cast<size_t>((2 * h + 1) * 6 + e)])
          << h << " " << e;
    }
  }
  cudaFree(xdev);
  cudaFree(ydev);

  BackendGraph bad;
  Desc r = bad.Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnReduceTensorOp_t add = CUDNN_REDUCE_TENSOR_ADD;
  bad.Set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &add);
  bad.Finalize(r);
  Desc op = bad.Make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  bad.SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
  bad.SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, bad.Tensor(3, CUDNN_DATA_FLOAT, xd, Packed4(xd)));
  bad.SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
              bad.Tensor(4, CUDNN_DATA_FLOAT, {1, 3, 2, 3}, Packed4({1, 3, 2, 3})));
  EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_BAD_PARAM);
}

// FP8 operands as cudnn-frontend's FP8 attention uses them: an E4M3 x E4M3 matmul (products and sums in FP32) into
// FP32, and a pointwise scale into E4M3 and E5M2 that rounds to nearest even and saturates to the largest finite
// value (448, 57344).
TEST_F(CudnnBackend, Fp8MatmulAndSaturatingStores) {
  const std::vector<int64_t> ad = {1, 1, 2, 3}, bd = {1, 1, 3, 2}, cd = {1, 1, 2, 2};
  std::vector<uint8_t> a(6), b(6);
  std::vector<float> av(6), bv(6);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int i = 0; i < 6; ++i) {
    a[static_cast<size_t>(i)] = simgpu::nv::FloatToE4M3(u(rng));
    b[static_cast<size_t>(i)] = simgpu::nv::FloatToE4M3(u(rng));
    av[static_cast<size_t>(i)] = simgpu::nv::E4M3ToFloat(a[static_cast<size_t>(i)]);
    bv[static_cast<size_t>(i)] = simgpu::nv::E4M3ToFloat(b[static_cast<size_t>(i)]);
  }
  void *adev = nullptr, *bdev = nullptr, *cdev = nullptr, *e4dev = nullptr, *e5dev = nullptr;
  ASSERT_EQ(cudaMalloc(&adev, 6), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&bdev, 6), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&cdev, 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&e4dev, 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&e5dev, 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(adev, a.data(), 6, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(bdev, b.data(), 6, cudaMemcpyHostToDevice), cudaSuccess);
  const float scale = 300.0f;
  BackendGraph g;
  Desc c = g.Tensor(3, CUDNN_DATA_FLOAT, cd, Packed4(cd));
  g.Matmul(g.Tensor(1, CUDNN_DATA_FP8_E4M3, ad, Packed4(ad)), g.Tensor(2, CUDNN_DATA_FP8_E4M3, bd, Packed4(bd)), c);
  Desc s = g.Tensor(4, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  g.Pointwise(CUDNN_POINTWISE_MUL, c, s, g.Tensor(5, CUDNN_DATA_FP8_E4M3, cd, Packed4(cd)));
  g.Pointwise(CUDNN_POINTWISE_MUL, c, s, g.Tensor(6, CUDNN_DATA_FP8_E5M2, cd, Packed4(cd)));
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(g.Execute(handle_, {{1, adev}, {2, bdev}, {3, cdev}, {4, const_cast<float*>(&scale)}, {5, e4dev},
                                {6, e5dev}}),
            CUDNN_STATUS_SUCCESS);
  float cv[4];
  uint8_t e4[4], e5[4];
  ASSERT_EQ(cudaMemcpy(cv, cdev, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(e4, e4dev, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(e5, e5dev, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  int saturated = 0;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double exact = 0, magnitude = 0;
      for (int k = 0; k < 3; ++k) {
        const double p = double{av[static_cast<size_t>(i * 3 + k)]} * bv[static_cast<size_t>(k * 2 + j)];
        exact += p;
        magnitude += std::fabs(p);
      }
      const float got = cv[i * 2 + j];
      // Products of 4-bit significands are exact in FP32; the two additions round: |err| <= 2u sum |a_k b_k|.
      EXPECT_LE(std::fabs(got - exact), 2 * std::ldexp(1.0, -24) * magnitude) << i << j;
      const float scaled = got * scale;
      const float e4_expect = std::fabs(scaled) > 448.0f ? std::copysign(448.0f, scaled)
                                                          : simgpu::nv::E4M3ToFloat(simgpu::nv::FloatToE4M3(scaled));
      EXPECT_EQ(simgpu::nv::E4M3ToFloat(e4[i * 2 + j]), e4_expect) << i << j;
      EXPECT_EQ(e5[i * 2 + j], simgpu::nv::FloatToE5M2(scaled)) << i << j;
      saturated += std::fabs(scaled) > 448.0f;
    }
  }
  EXPECT_GT(saturated, 0);  // the seed gives at least one product sum above 448 / 300
  for (void* p : {adev, bdev, cdev, e4dev, e5dev}) cudaFree(p);
}

// ---- status codes of execution ----

TEST_F(CudnnBackend, ExecutionStatuses) {
  BackendGraph g;
  const std::vector<int64_t> d = {1, 1, 2, 2};
  Desc a = g.Tensor(1, CUDNN_DATA_FLOAT, d, Packed4(d));
  Desc b = g.Tensor(2, CUDNN_DATA_FLOAT, d, Packed4(d));
  g.Pointwise(CUDNN_POINTWISE_EXP, a, nullptr, b);
  // Execute before a plan exists, and with a variant pack missing a tensor.
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(g.configs(), 1);
  float in[4] = {0, 1, 2, 3}, out[4] = {};
  EXPECT_EQ(g.Execute(handle_, {{1, in}}), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(g.Execute(nullptr, {{1, in}, {2, out}}), CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(g.Execute(handle_, {{1, in}, {2, out}}), CUDNN_STATUS_SUCCESS);
  cudaDeviceSynchronize();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], std::exp(in[i]));

  // A graph simgpu cannot execute (a virtual input nothing writes) finalizes; heuristics return no engine.
  BackendGraph u;
  Desc virt = u.Tensor(3, CUDNN_DATA_FLOAT, d, Packed4(d), true);
  Desc y = u.Tensor(4, CUDNN_DATA_FLOAT, d, Packed4(d));
  u.Pointwise(CUDNN_POINTWISE_EXP, virt, nullptr, y);
  EXPECT_EQ(u.Build(handle_), CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(u.configs(), 0);

  // An unfinalized plan.
  Desc plan = nullptr, pack = nullptr;
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendFinalize(pack), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendExecute(handle_, plan, pack), CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  EXPECT_EQ(cudnnBackendExecute(handle_, pack, plan), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnBackendDestroyDescriptor(plan), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendDestroyDescriptor(pack), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendDestroyDescriptor(pack), CUDNN_STATUS_BAD_PARAM);
  // Types simgpu does not implement.
  EXPECT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, &plan),
            CUDNN_STATUS_NOT_SUPPORTED);
}

// cuDNN's native CUDA graph API: populate puts the plan's work on a pack's pointers into an application graph; each
// launch of an executable instantiated from it runs the work, reading its inputs at that launch; update rebinds the
// graph to another pack of the same plan, which an executable follows after cudaGraphExecUpdate (not before).
TEST_F(CudnnBackend, NativeCudaGraphRunsThePlanAtEachLaunchAndFollowsUpdates) {
  BackendGraph g;
  const std::vector<int64_t> d = {1, 1, 2, 2};
  Desc a = g.Tensor(1, CUDNN_DATA_FLOAT, d, Packed4(d));
  Desc b = g.Tensor(2, CUDNN_DATA_FLOAT, d, Packed4(d));
  g.Pointwise(CUDNN_POINTWISE_EXP, a, nullptr, b);
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  // The engine says so, as cudnn-frontend's select_behavior_notes({SUPPORTS_CUDA_GRAPH_NATIVE_API}) asks.
  Desc config = g.Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR), engine = g.Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t count = 0;
  ASSERT_EQ(cudnnBackendGetAttribute(g.plan(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                     1, &count, &config),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                     &engine),
            CUDNN_STATUS_SUCCESS);
  cudnnBackendBehaviorNote_t notes[4] = {};
  ASSERT_EQ(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 4, &count,
                                     notes),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(count, 1);
  EXPECT_EQ(notes[0], CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API);
  float* buf = nullptr;  // in1, out1, in2, out2: 4 floats each
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buf), 16 * sizeof(float)), cudaSuccess);
  float *in1 = buf, *out1 = buf + 4, *in2 = buf + 8, *out2 = buf + 12;
  ASSERT_EQ(cudaMemset(buf, 0, 16 * sizeof(float)), cudaSuccess);
  auto put = [](float* dst, float first) {
    float h[4] = {first, first + 1, first + 2, first + 3};
    ASSERT_EQ(cudaMemcpy(dst, h, sizeof h, cudaMemcpyHostToDevice), cudaSuccess);
  };
  auto expect_exp_of = [](const float* out, const float* in, const char* what) {
    float ho[4], hi[4];
    ASSERT_EQ(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(hi, in, sizeof hi, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ho[i], std::exp(hi[i])) << what << " " << i;
  };
  auto expect_zero = [](const float* out, const char* what) {
    float ho[4];
    ASSERT_EQ(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ho[i], 0.0f) << what << " " << i;
  };
  Desc pack1 = g.Pack({{1, in1}, {2, out1}}), pack2 = g.Pack({{1, in2}, {2, out2}});
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), pack1, graph), CUDNN_STATUS_SUCCESS);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 1u);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_zero(out1, "populate runs nothing");

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (float first : {0.0f, 4.0f}) {  // each launch reads the input as it is then
    put(in1, first);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    expect_exp_of(out1, in1, "launch on pack 1");
  }

  put(in2, -2.0f);
  ASSERT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack2, graph), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaMemset(out1, 0, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);  // the executable keeps pack 1 until it is updated
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_exp_of(out1, in1, "executable not updated");
  expect_zero(out2, "executable not updated");
  cudaGraphExecUpdateResultInfo info = {};
  ASSERT_EQ(cudaGraphExecUpdate(exec, graph, &info), cudaSuccess);
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  ASSERT_EQ(cudaMemset(out1, 0, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_exp_of(out2, in2, "executable updated");
  expect_zero(out1, "executable updated");

  // Refusals: another plan, a graph the plan did not populate, no graph, an unfinalized plan.
  BackendGraph other;
  Desc oa = other.Tensor(1, CUDNN_DATA_FLOAT, d, Packed4(d));
  Desc ob = other.Tensor(2, CUDNN_DATA_FLOAT, d, Packed4(d));
  other.Pointwise(CUDNN_POINTWISE_RELU_FWD, oa, nullptr, ob);
  ASSERT_EQ(other.Build(handle_), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendUpdateCudaGraph(handle_, other.plan(), other.Pack({{1, in1}, {2, out1}}), graph),
            CUDNN_STATUS_BAD_PARAM);
  cudaGraph_t empty = nullptr;
  ASSERT_EQ(cudaGraphCreate(&empty, 0), cudaSuccess);
  EXPECT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack1, empty), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), pack1, nullptr), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  Desc unfinalized = nullptr;
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &unfinalized), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendPopulateCudaGraph(handle_, unfinalized, pack1, empty), CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  EXPECT_EQ(cudnnBackendDestroyDescriptor(unfinalized), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaGraphGetNodes(empty, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u) << "a refused call adds no node";

  // cudaGraphExecUpdate refuses a graph of another topology (two populated nodes) and changes nothing.
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), pack1, empty), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), pack1, empty), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudaGraphExecUpdate(exec, empty, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  ASSERT_EQ(cudaMemset(out2, 0, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_exp_of(out2, in2, "refused update");

  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(empty), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
}

// The native-CUDA-graph tests' setup: a ReLU on [1, 1, 2, 2] FP32 and the buffers of two variant packs in one
// allocation (in1, out1, in2, out2; outputs zeroed, kIn1 and kIn2 uploaded).
struct ReluOnTwoPacks {
  static constexpr float kIn1[4] = {-1, 2, -3, 4}, kIn2[4] = {5, -6, 7, -8};
  BackendGraph g;
  float* buf = nullptr;
  void Build(cudnnHandle_t handle) {
    const std::vector<int64_t> d = {1, 1, 2, 2};
    Desc a = g.Tensor(1, CUDNN_DATA_FLOAT, d, Packed4(d));
    Desc b = g.Tensor(2, CUDNN_DATA_FLOAT, d, Packed4(d));
    g.Pointwise(CUDNN_POINTWISE_RELU_FWD, a, nullptr, b);
    ASSERT_EQ(g.Build(handle), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buf), 16 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(buf, 0, 16 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(buf, kIn1, sizeof kIn1, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(buf + 8, kIn2, sizeof kIn2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  // The device's `out` is ReLU(`in`) (host values).
  static void Expect(const float* out, const float* in, const char* what) {
    float ho[4];
    ASSERT_EQ(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ho[i], in[i] > 0 ? in[i] : 0.0f) << what << " " << i;
  }
};

// cudnn-frontend's way (graph.h populate_cuda_graph / update_cuda_graph): populate a scratch graph, clone it into a
// child graph node of the application's graph, destroy the scratch graph; later update the child node's embedded
// graph and cudaGraphExecUpdate the application's executable.
TEST_F(CudnnBackend, NativeCudaGraphUpdatesAClonedChildGraph) {
  ReluOnTwoPacks r;
  ASSERT_NO_FATAL_FAILURE(r.Build(handle_));
  BackendGraph& g = r.g;
  float* const buf = r.buf;  // in1, out1, in2, out2
  const float* const in1 = ReluOnTwoPacks::kIn1;
  const float* const in2 = ReluOnTwoPacks::kIn2;
  const auto expect_relu = ReluOnTwoPacks::Expect;
  cudaGraph_t scratch = nullptr, main_graph = nullptr, embedded = nullptr;
  ASSERT_EQ(cudaGraphCreate(&scratch, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphCreate(&main_graph, 0), cudaSuccess);
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), g.Pack({{1, buf}, {2, buf + 4}}), scratch),
            CUDNN_STATUS_SUCCESS);
  cudaGraphNode_t child = nullptr;
  ASSERT_EQ(cudaGraphAddChildGraphNode(&child, main_graph, nullptr, 0, scratch), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(scratch), cudaSuccess);  // the node holds a clone
  ASSERT_EQ(cudaGraphChildGraphNodeGetGraph(child, &embedded), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(embedded), cudaErrorInvalidValue) << "the node owns its graph";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, main_graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_relu(buf + 4, in1, "child graph on pack 1");

  // The application's graph holds a child node, not the plan's node: refused. A graph holding the plan's node and
  // another (as cuDNN 9.19 answered on an H200: EXECUTION_FAILED_CUDA_DRIVER, nothing rebound). The embedded
  // clone: updated.
  Desc pack2 = g.Pack({{1, buf + 8}, {2, buf + 12}});
  EXPECT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack2, main_graph), CUDNN_STATUS_BAD_PARAM);
  cudaGraph_t mixed = nullptr, empty = nullptr;
  ASSERT_EQ(cudaGraphCreate(&mixed, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphCreate(&empty, 0), cudaSuccess);
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), g.Pack({{1, buf}, {2, buf + 4}}), mixed),
            CUDNN_STATUS_SUCCESS);
  cudaGraphNode_t foreign = nullptr;
  ASSERT_EQ(cudaGraphAddChildGraphNode(&foreign, mixed, nullptr, 0, empty), cudaSuccess);
  EXPECT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack2, mixed), CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER);
  cudaGraphExec_t mixed_exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&mixed_exec, mixed, 0), cudaSuccess);
  ASSERT_EQ(cudaMemset(buf + 4, 0, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(mixed_exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_relu(buf + 4, in1, "a refused update rebinds nothing");
  const float zero[4] = {};
  expect_relu(buf + 12, zero, "a refused update rebinds nothing");
  EXPECT_EQ(cudaGraphExecDestroy(mixed_exec), cudaSuccess);
  for (cudaGraph_t graph : {mixed, empty}) EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack2, embedded), CUDNN_STATUS_SUCCESS);
  cudaGraphExecUpdateResultInfo info = {};
  ASSERT_EQ(cudaGraphExecUpdate(exec, main_graph, &info), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_relu(buf + 12, in2, "child graph updated to pack 2");

  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(main_graph), cudaSuccess);
  EXPECT_EQ(cudaGraphChildGraphNodeGetGraph(child, &embedded), cudaErrorInvalidValue) << "gone with its graph";
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
}

// cudnn-frontend's sample with a main graph: the frontend's graph (holding the populated graph as a child) is itself
// cloned into the application's main graph; after update_cuda_graph (which walks the frontend's graph: its node,
// no dependents, the embedded graph) the application hands the frontend's graph to its executable with
// cudaGraphExecChildGraphNodeSetParams.
TEST_F(CudnnBackend, NativeCudaGraphNestedInAMainGraph) {
  ReluOnTwoPacks r;
  ASSERT_NO_FATAL_FAILURE(r.Build(handle_));
  BackendGraph& g = r.g;
  float* const buf = r.buf;  // in1, out1, in2, out2
  const float* const in1 = ReluOnTwoPacks::kIn1;
  const float* const in2 = ReluOnTwoPacks::kIn2;
  const auto expect_relu = ReluOnTwoPacks::Expect;
  cudaGraph_t scratch = nullptr, frontend = nullptr, main_graph = nullptr, embedded = nullptr;
  ASSERT_EQ(cudaGraphCreate(&scratch, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphCreate(&frontend, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphCreate(&main_graph, 0), cudaSuccess);
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), g.Pack({{1, buf}, {2, buf + 4}}), scratch),
            CUDNN_STATUS_SUCCESS);
  cudaGraphNode_t backend_node = nullptr, in_main = nullptr;
  ASSERT_EQ(cudaGraphAddChildGraphNode(&backend_node, frontend, nullptr, 0, scratch), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(scratch), cudaSuccess);
  ASSERT_EQ(cudaGraphAddChildGraphNode(&in_main, main_graph, nullptr, 0, frontend), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, main_graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_relu(buf + 4, in1, "nested on pack 1");

  size_t n = 4;
  cudaGraphNode_t nodes[4] = {};
  ASSERT_EQ(cudaGraphGetNodes(frontend, nodes, &n), cudaSuccess);
  ASSERT_EQ(n, 1u);
  size_t dependents = 7;
  ASSERT_EQ(cudaGraphNodeGetDependentNodes(nodes[0], nullptr, nullptr, &dependents), cudaSuccess);
  EXPECT_EQ(dependents, 0u);
  ASSERT_EQ(cudaGraphChildGraphNodeGetGraph(nodes[0], &embedded), cudaSuccess);
  ASSERT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), g.Pack({{1, buf + 8}, {2, buf + 12}}), embedded),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaMemset(buf + 4, 0, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);  // the main graph holds a clone made before the update
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const float zero[4] = {};
  expect_relu(buf + 4, in1, "a clone does not follow its original");
  expect_relu(buf + 12, zero, "a clone does not follow its original");
  ASSERT_EQ(cudaGraphExecChildGraphNodeSetParams(exec, in_main, frontend), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_relu(buf + 12, in2, "nested, set to the updated graph");

  // Refused: a graph of another topology, a node that is not a child graph node of the executable's graph.
  cudaGraph_t two = nullptr;
  ASSERT_EQ(cudaGraphCreate(&two, 0), cudaSuccess);
  cudaGraphNode_t first = nullptr, second = nullptr;
  ASSERT_EQ(cudaGraphAddChildGraphNode(&first, two, nullptr, 0, embedded), cudaSuccess);
  ASSERT_EQ(cudaGraphAddChildGraphNode(&second, two, &first, 1, embedded), cudaSuccess);
  EXPECT_EQ(cudaGraphExecChildGraphNodeSetParams(exec, in_main, two), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(cudaGraphExecChildGraphNodeSetParams(exec, first, frontend), cudaErrorInvalidValue);
  cudaGraphNode_t got[2] = {};
  size_t count = 2;
  ASSERT_EQ(cudaGraphNodeGetDependentNodes(first, got, nullptr, &count), cudaSuccess);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(got[0], second);
  EXPECT_EQ(got[1], nullptr);
  count = 1;
  ASSERT_EQ(cudaGraphNodeGetDependencies(second, got, nullptr, &count), cudaSuccess);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(got[0], first);
  count = 2;
  ASSERT_EQ(cudaGraphGetRootNodes(two, got, &count), cudaSuccess);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(got[0], first);
  EXPECT_EQ(got[1], nullptr);

  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  for (cudaGraph_t graph : {two, main_graph, frontend}) EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
}


// The shim's design for capturing the operands of cuDNN's native-graph launches (docs/design.md, "cuDNN's native
// CUDA graphs"), as tools/gpu/cudnn_native_graph_probe.cc's E5 measured it on an H200, run on simgpu: snapshot nodes
// (a copy of the input before cuDNN's root, a copy of the output after its leaf, a host node) added to the populated
// graph ride along into a child node and run at each launch; cuDNN's update refuses the embedded graph holding them;
// updating a clone without them and copying the kernel node's parameters back through the driver (the runtime's
// getter refuses cuDNN's kernels) leaves the application's graph its nodes, so cudaGraphExecChildGraphNodeSetParams
// and cudaGraphExecUpdate both run the new pack, with the snapshot nodes retargeted.
int host_runs = 0;
void CountRun(void* p) { ++*static_cast<int*>(p); }

TEST_F(CudnnBackend, NativeCudaGraphWithSnapshotNodesUpdatedThroughAClone) {
  ReluOnTwoPacks r;
  ASSERT_NO_FATAL_FAILURE(r.Build(handle_));
  BackendGraph& g = r.g;
  float* const buf = r.buf;  // in1, out1, in2, out2
  float stage_in[4] = {}, stage_out[4] = {};
  cudaGraph_t scratch = nullptr, program = nullptr, embedded = nullptr;
  ASSERT_EQ(cudaGraphCreate(&scratch, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphCreate(&program, 0), cudaSuccess);
  ASSERT_EQ(cudnnBackendPopulateCudaGraph(handle_, g.plan(), g.Pack({{1, buf}, {2, buf + 4}}), scratch),
            CUDNN_STATUS_SUCCESS);
  size_t n = 1;
  cudaGraphNode_t root = nullptr;
  ASSERT_EQ(cudaGraphGetRootNodes(scratch, &root, &n), cudaSuccess);
  ASSERT_EQ(n, 1u);
  cudaGraphNode_t in = nullptr, out = nullptr, host = nullptr;
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&in, scratch, nullptr, 0, stage_in, buf, sizeof stage_in, cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaGraphAddDependencies(scratch, &in, &root, nullptr, 1), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&out, scratch, &root, 1, stage_out, buf + 4, sizeof stage_out,
                                     cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaHostNodeParams hp = {CountRun, &host_runs};
  ASSERT_EQ(cudaGraphAddHostNode(&host, scratch, &out, 1, &hp), cudaSuccess);
  cudaGraphNode_t child = nullptr;
  ASSERT_EQ(cudaGraphAddChildGraphNode(&child, program, nullptr, 0, scratch), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(scratch), cudaSuccess);
  ASSERT_EQ(cudaGraphChildGraphNodeGetGraph(child, &embedded), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, program, 0), cudaSuccess);
  host_runs = 0;
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ReluOnTwoPacks::Expect(buf + 4, ReluOnTwoPacks::kIn1, "pack 1 with snapshot nodes");
  EXPECT_EQ(host_runs, 1);
  EXPECT_EQ(std::vector<float>(stage_in, stage_in + 4), std::vector<float>(ReluOnTwoPacks::kIn1,
                                                                             ReluOnTwoPacks::kIn1 + 4));
  EXPECT_EQ(std::vector<float>(stage_out, stage_out + 4), (std::vector<float>{0, 2, 0, 4}));

  // The snapshot nodes in the embedded clone, found without handles: the copies by destination, the host node by
  // its function and argument.
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(embedded, nullptr, &count), cudaSuccess);
  ASSERT_EQ(count, 4u);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(embedded, nodes.data(), &count), cudaSuccess);
  std::vector<cudaGraphNode_t> ours, cudnn;
  cudaGraphNode_t e_in = nullptr, e_out = nullptr;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    if (type == cudaGraphNodeTypeMemcpy) {
      cudaMemcpy3DParms m = {};
      ASSERT_EQ(cudaGraphMemcpyNodeGetParams(node, &m), cudaSuccess);
      (m.dstPtr.ptr == stage_in ? e_in : e_out) = node;
      ours.push_back(node);
    } else if (type == cudaGraphNodeTypeHost) {
      cudaHostNodeParams h = {};
      ASSERT_EQ(cudaGraphHostNodeGetParams(node, &h), cudaSuccess);
      EXPECT_EQ(h.userData, &host_runs);
      ours.push_back(node);
    } else {
      EXPECT_EQ(type, cudaGraphNodeTypeKernel);
      cudnn.push_back(node);
    }
  }
  ASSERT_EQ(ours.size(), 3u);
  ASSERT_EQ(cudnn.size(), 1u);
  ASSERT_NE(e_in, nullptr);
  ASSERT_NE(e_out, nullptr);

  Desc pack2 = g.Pack({{1, buf + 8}, {2, buf + 12}});
  EXPECT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack2, embedded), CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
      << "cuDNN refuses a graph holding nodes it did not populate";
  cudaGraph_t clone = nullptr;
  ASSERT_EQ(cudaGraphClone(&clone, embedded), cudaSuccess);
  for (cudaGraphNode_t node : ours) {
    cudaGraphNode_t c = nullptr;
    ASSERT_EQ(cudaGraphNodeFindInClone(&c, node, clone), cudaSuccess);
    ASSERT_EQ(cudaGraphDestroyNode(c), cudaSuccess);
  }
  ASSERT_EQ(cudnnBackendUpdateCudaGraph(handle_, g.plan(), pack2, clone), CUDNN_STATUS_SUCCESS);
  cudaKernelNodeParams rt = {};
  EXPECT_EQ(cudaGraphKernelNodeGetParams(cudnn[0], &rt), cudaErrorInvalidDeviceFunction)
      << "the runtime's getter refuses cuDNN's kernels (98 on an H200)";
  PFN_cuGraphKernelNodeGetParams_v12000 get = nullptr;
  PFN_cuGraphKernelNodeSetParams_v12000 set = nullptr;
  PFN_cuGraphKernelNodeCopyAttributes_v11000 copy_attributes = nullptr;
  cudaDriverEntryPointQueryResult q;
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", reinterpret_cast<void**>(&get), 12000, 0,
                                             &q), cudaSuccess);
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuGraphKernelNodeSetParams", reinterpret_cast<void**>(&set), 12000, 0,
                                             &q), cudaSuccess);
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuGraphKernelNodeCopyAttributes",
                                             reinterpret_cast<void**>(&copy_attributes), 11000, 0, &q),
            cudaSuccess);
  cudaGraphNode_t c = nullptr;
  ASSERT_EQ(cudaGraphNodeFindInClone(&c, cudnn[0], clone), cudaSuccess);
  CUDA_KERNEL_NODE_PARAMS kp = {};
  ASSERT_EQ(get(reinterpret_cast<CUgraphNode>(c), &kp), CUDA_SUCCESS);
  ASSERT_EQ(set(reinterpret_cast<CUgraphNode>(cudnn[0]), &kp), CUDA_SUCCESS);
  ASSERT_EQ(copy_attributes(reinterpret_cast<CUgraphNode>(cudnn[0]), reinterpret_cast<CUgraphNode>(c)), CUDA_SUCCESS);
  ASSERT_EQ(cudaGraphMemcpyNodeSetParams1D(e_in, stage_in, buf + 8, sizeof stage_in, cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaGraphMemcpyNodeSetParams1D(e_out, stage_out, buf + 12, sizeof stage_out, cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(clone), cudaSuccess);

  // The application's way on: the executable's child node set to the embedded graph (it has its nodes), then an
  // exec update, then a fresh instantiation: each runs pack 2 with the snapshots of pack 2's buffers.
  ASSERT_EQ(cudaGraphExecChildGraphNodeSetParams(exec, child, embedded), cudaSuccess);
  host_runs = 0;
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ReluOnTwoPacks::Expect(buf + 12, ReluOnTwoPacks::kIn2, "pack 2 after the copy back");
  EXPECT_EQ(host_runs, 1);
  EXPECT_EQ(std::vector<float>(stage_in, stage_in + 4), std::vector<float>(ReluOnTwoPacks::kIn2,
                                                                             ReluOnTwoPacks::kIn2 + 4));
  EXPECT_EQ(std::vector<float>(stage_out, stage_out + 4), (std::vector<float>{5, 0, 7, 0}));
  cudaGraphExecUpdateResultInfo info = {};
  ASSERT_EQ(cudaGraphExecUpdate(exec, program, &info), cudaSuccess);
  cudaGraphExec_t fresh = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&fresh, program, 0), cudaSuccess);
  ASSERT_EQ(cudaMemset(buf + 12, 0, 4 * sizeof(float)), cudaSuccess);
  host_runs = 0;
  ASSERT_EQ(cudaGraphLaunch(fresh, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ReluOnTwoPacks::Expect(buf + 12, ReluOnTwoPacks::kIn2, "a fresh instantiation");
  EXPECT_EQ(host_runs, 1);
  EXPECT_EQ(cudaGraphExecDestroy(fresh), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(program), cudaSuccess);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
}

}  // namespace
}  // namespace simgpu::cudnn::testing
