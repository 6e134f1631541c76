// SIMGPU_FAULT at cuDNN's sites: conv (one counter for every convolution, legacy or backend; elem indexes the
// output in memory order) and attn (one counter for attention graph executions; elem indexes the attention
// output in memory order). main() re-executes the binary with RANK=0 and the faults below, because the core reads
// the environment once, at load time; each test uses its own site, so the tests do not disturb each other's
// numbering whether run in one process or one process each.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/cudnn/backend_test_util.h"
#include "tools/simgpu/cudnn/ragged_test_util.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {
namespace {

constexpr char kFaults[] =
    "conv:rank=0:call=1:elem=5:bit=31;"      // legacy backward data, FP32 NHWC: storage element 5, sign bit
    "conv:rank=0:call=2:elem=3:value=7.5;"   // backend forward graph, FP16 NHWC: storage element 3 set to 7.5
    "conv:rank=1:call=0:elem=0:bit=0;"       // another rank: never applied here
    "attn:rank=0:call=1:elem=10:bit=14;"     // the second attention execution: O's element 10, bit 14
    "attn:rank=0:call=3:elem=400:bit=3;"     // the fourth (a ragged O): its existing element 400, bit 3
    "gemm:rank=0:call=0:elem=0:bit=0";       // another site: never applied by cuDNN

using Desc = cudnnBackendDescriptor_t;

class CudnnFaults : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS); }
  cudnnHandle_t handle_ = nullptr;
};

// Storage elements of `got` that differ from a tensor holding `expect` (logical values) in the same layout.
std::vector<size_t> Differences(const Tensor& got, const std::vector<double>& expect, size_t* first_index) {
  Tensor ref(got.type(), got.dims(), got.strides());
  for (size_t i = 0; i < expect.size(); ++i) ref.Set(i, expect[i]);
  std::vector<size_t> out;
  const size_t bytes = Bytes(got.type());
  for (size_t e = 0; e * bytes < got.storage().size(); ++e) {
    if (std::memcmp(&got.storage()[e * bytes], &ref.storage()[e * bytes], bytes) != 0) out.push_back(e);
  }
  if (first_index != nullptr && !out.empty()) *first_index = out[0];
  return out;
}

TEST_F(CudnnFaults, ConvolutionSiteCountsLegacyAndBackendCalls) {
  const ConvCase cc = {1, 2, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateTensorDescriptor(&yd);
  cudnnCreateFilterDescriptor(&wd);
  cudnnCreateConvolutionDescriptor(&cd);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 4, 4), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 3, 4, 4), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 3, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  Tensor x(CUDNN_DATA_FLOAT, cc.XDims(), Tensor::Packed(cc.XDims(), true));
  Tensor w(CUDNN_DATA_FLOAT, cc.WDims(), Tensor::Packed(cc.WDims(), true));
  Tensor y(CUDNN_DATA_FLOAT, cc.YDims(), Tensor::Packed(cc.YDims(), true));
  std::mt19937 rng(1);
  for (Tensor* t : {&x, &w, &y}) {
    t->Fill(&rng, true);
    t->Upload();
  }
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<double> ref, abs;

  // Call 0: forward, no fault.
  ASSERT_EQ(cudnnConvolutionForward(handle_, &alpha, xd, x.device(), wd, w.device(), cd,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta, yd, y.device()),
            CUDNN_STATUS_SUCCESS);
  y.Download();
  ReferenceConv(cc, Kind::kForward, x.values(), w.values(), y.values(), &ref, &abs);
  EXPECT_TRUE(Differences(y, ref, nullptr).empty());

  // Call 1: backward data; the sign of storage element 5 flips.
  ASSERT_EQ(cudnnConvolutionBackwardData(handle_, &alpha, wd, w.device(), yd, y.device(), cd,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &beta, xd, x.device()),
            CUDNN_STATUS_SUCCESS);
  const std::vector<double> y_values = y.values(), w_values = w.values(), x_before = x.values();
  x.Download();
  ReferenceConv(cc, Kind::kBackwardData, x_before, w_values, y_values, &ref, &abs);
  size_t at = 0;
  ASSERT_EQ(Differences(x, ref, &at).size(), 1u);
  EXPECT_EQ(at, 5u);
  uint32_t got, want;
  std::memcpy(&got, &x.storage()[5 * 4], 4);
  Tensor clean(CUDNN_DATA_FLOAT, x.dims(), x.strides());
  for (size_t i = 0; i < ref.size(); ++i) clean.Set(i, ref[i]);
  std::memcpy(&want, &clean.storage()[5 * 4], 4);
  EXPECT_EQ(got ^ want, 0x80000000u);

  // Call 2: a backend forward graph in FP16; storage element 3 reads 7.5.
  Tensor xh(CUDNN_DATA_HALF, cc.XDims(), Tensor::Packed(cc.XDims(), true));
  Tensor wh(CUDNN_DATA_HALF, cc.WDims(), Tensor::Packed(cc.WDims(), true));
  Tensor yh(CUDNN_DATA_HALF, cc.YDims(), Tensor::Packed(cc.YDims(), true));
  for (Tensor* t : {&xh, &wh}) {
    t->Fill(&rng, true);
    t->Upload();
  }
  BackendGraph g;
  Desc xt = g.Tensor(1, CUDNN_DATA_HALF, xh.dims(), xh.strides());
  Desc wt = g.Tensor(2, CUDNN_DATA_HALF, wh.dims(), wh.strides());
  Desc yt = g.Tensor(3, CUDNN_DATA_HALF, yh.dims(), yh.strides());
  g.Convolution(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, xt, wt, yt, {1, 1}, {1, 1}, {1, 1},
                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT, 1.0f, 0.0f);
  ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(g.Execute(handle_, {{1, xh.device()}, {2, wh.device()}, {3, yh.device()}}), CUDNN_STATUS_SUCCESS);
  yh.Download();
  ReferenceConv(cc, Kind::kForward, xh.values(), wh.values(), yh.values(), &ref, &abs);
  ASSERT_EQ(Differences(yh, ref, &at).size(), 1u);
  EXPECT_EQ(at, 3u);
  EXPECT_EQ(Decode(CUDNN_DATA_HALF, &yh.storage()[3 * 2]), 7.5);

  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
}

// Two executions of the same fused attention: the second's output differs in element 10, bit 14.
TEST_F(CudnnFaults, AttentionSiteCountsGraphExecutions) {
  const int64_t b = 1, h = 2, s = 4, d = 8;
  const std::vector<int64_t> dims = {b, h, s, d};
  const std::vector<int64_t> strides = Tensor::Packed(dims, false);
  Tensor q(CUDNN_DATA_HALF, dims, strides), k(CUDNN_DATA_HALF, dims, strides), v(CUDNN_DATA_HALF, dims, strides);
  std::mt19937 rng(2);
  for (Tensor* t : {&q, &k, &v}) {
    t->Fill(&rng, false);
    t->Upload();
  }
  std::vector<std::vector<unsigned char>> outputs;
  for (int run = 0; run < 2; ++run) {
    Tensor o(CUDNN_DATA_HALF, dims, strides);
    BackendGraph g;
    Desc qt = g.Tensor(1, CUDNN_DATA_HALF, dims, strides);
    Desc kt = g.Tensor(2, CUDNN_DATA_HALF, dims, strides);
    Desc vt = g.Tensor(3, CUDNN_DATA_HALF, dims, strides);
    Desc ot = g.Tensor(4, CUDNN_DATA_HALF, dims, strides);
    g.Sdpa(qt, kt, vt, ot, nullptr, nullptr);
    ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(g.Execute(handle_, {{1, q.device()}, {2, k.device()}, {3, v.device()}, {4, o.device()}}),
              CUDNN_STATUS_SUCCESS);
    o.Download();
    outputs.push_back(o.storage());
  }
  ASSERT_EQ(outputs[0].size(), outputs[1].size());
  for (size_t e = 0; e < outputs[0].size() / 2; ++e) {
    uint16_t first, second;
    std::memcpy(&first, &outputs[0][e * 2], 2);
    std::memcpy(&second, &outputs[1][e * 2], 2);
    EXPECT_EQ(first ^ second, e == 10 ? 1u << 14 : 0u) << "element " << e;
  }
  // Calls 2 and 3: ragged attention whose O starts 8 elements into its buffer (offsets 8 + cumulative length * h *
  // d). The elements of a ragged tensor are those in [R[0], R[b]), so existing element 400 is storage element 408.
  RaggedCase c;
  c.o_lead = 8;
  std::vector<std::vector<unsigned char>> ragged;
  for (int run = 0; run < 2; ++run) {
    RaggedData data(c, 9);
    BackendGraph g;
    BuildRaggedFused(&g, c, false);
    ASSERT_EQ(g.Build(handle_), CUDNN_STATUS_SUCCESS);
    float scale = c.scale, lowest = 0.0f;
    ASSERT_EQ(g.Execute(handle_, data.Pack(&scale, &lowest, false)), CUDNN_STATUS_SUCCESS);
    data.o.Download();
    for (size_t i = 0; i < static_cast<size_t>(c.o_lead); ++i) EXPECT_TRUE(data.o.untouched(i)) << "lead " << i;
    ragged.push_back(data.o.bytes());
  }
  for (size_t e = 0; e < ragged[0].size() / 2; ++e) {
    uint16_t first, second;
    std::memcpy(&first, &ragged[0][e * 2], 2);
    std::memcpy(&second, &ragged[1][e * 2], 2);
    EXPECT_EQ(first ^ second, e == 408 ? 1u << 3 : 0u) << "ragged element " << e;
  }
}

}  // namespace
}  // namespace simgpu::cudnn::testing

int main(int argc, char** argv) {
  if (getenv("SIMGPU_FAULT") == nullptr) {
    setenv("RANK", "0", 1);
    setenv("SIMGPU_FAULT", simgpu::cudnn::testing::kFaults, 1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
