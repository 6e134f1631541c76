// shim_status_standin_probe: calls every entry point the shim intercepts once, with valid arguments, against the
// stand-in vendor libraries of status_standin.h (which answer the status the test asks for), and prints
// "op NAME=STATUS" for each op, "call NAME=STATUS" for the other calls the stand-ins answer with a status
// (communicators, cuDNN backend descriptors), "setup NAME=STATUS" for the calls that set them up. Memory comes
// from simgpu's cudart, so the shim can snapshot operands as on a device.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "shim/testing/workload_util.h"
#include "shim/testing/cudnn_graph.h"

namespace {

using ttrace::shim::testing::Die;
void Op(const char* name, int status) { printf("op %s=%d\n", name, status); }
void Setup(const char* name, int status) { printf("setup %s=%d\n", name, status); }
void Call(const char* name, int status) { printf("call %s=%d\n", name, status); }

void Gemms(cublasHandle_t h, void* a, void* b, void* c) {
  const cublasOperation_t N = CUBLAS_OP_N;
  auto* fa = static_cast<float*>(a);
  auto* fb = static_cast<float*>(b);
  auto* fc = static_cast<float*>(c);
  auto* da = static_cast<double*>(a);
  auto* db = static_cast<double*>(b);
  auto* dc = static_cast<double*>(c);
  auto* ha = static_cast<__half*>(a);
  auto* hb = static_cast<__half*>(b);
  auto* hc = static_cast<__half*>(c);
  const float f1 = 1, f0 = 0;
  const double d1 = 1, d0 = 0;
  const __half h1 = __float2half(1.0f), h0 = __float2half(0.0f);
  Op("cublasSgemm_v2", cublasSgemm(h, N, N, 2, 2, 2, &f1, fa, 2, fb, 2, &f0, fc, 2));
  Op("cublasSgemm_v2_64", cublasSgemm_64(h, N, N, 2, 2, 2, &f1, fa, 2, fb, 2, &f0, fc, 2));
  Op("cublasDgemm_v2", cublasDgemm(h, N, N, 2, 2, 2, &d1, da, 2, db, 2, &d0, dc, 2));
  Op("cublasDgemm_v2_64", cublasDgemm_64(h, N, N, 2, 2, 2, &d1, da, 2, db, 2, &d0, dc, 2));
  Op("cublasHgemm", cublasHgemm(h, N, N, 2, 2, 2, &h1, ha, 2, hb, 2, &h0, hc, 2));
  Op("cublasHgemm_64", cublasHgemm_64(h, N, N, 2, 2, 2, &h1, ha, 2, hb, 2, &h0, hc, 2));
  Op("cublasSgemmStridedBatched",
     cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &f1, fa, 2, 4, fb, 2, 4, &f0, fc, 2, 4, 2));
  Op("cublasSgemmStridedBatched_64",
     cublasSgemmStridedBatched_64(h, N, N, 2, 2, 2, &f1, fa, 2, 4, fb, 2, 4, &f0, fc, 2, 4, 2));
  Op("cublasDgemmStridedBatched",
     cublasDgemmStridedBatched(h, N, N, 2, 2, 2, &d1, da, 2, 4, db, 2, 4, &d0, dc, 2, 4, 2));
  Op("cublasDgemmStridedBatched_64",
     cublasDgemmStridedBatched_64(h, N, N, 2, 2, 2, &d1, da, 2, 4, db, 2, 4, &d0, dc, 2, 4, 2));
  Op("cublasHgemmStridedBatched",
     cublasHgemmStridedBatched(h, N, N, 2, 2, 2, &h1, ha, 2, 4, hb, 2, 4, &h0, hc, 2, 4, 2));
  Op("cublasHgemmStridedBatched_64",
     cublasHgemmStridedBatched_64(h, N, N, 2, 2, 2, &h1, ha, 2, 4, hb, 2, 4, &h0, hc, 2, 4, 2));
  Op("cublasGemmEx", cublasGemmEx(h, N, N, 2, 2, 2, &f1, a, CUDA_R_32F, 2, b, CUDA_R_32F, 2, &f0, c, CUDA_R_32F, 2,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Op("cublasGemmEx_64", cublasGemmEx_64(h, N, N, 2, 2, 2, &f1, a, CUDA_R_32F, 2, b, CUDA_R_32F, 2, &f0, c,
                                        CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Op("cublasGemmStridedBatchedEx",
     cublasGemmStridedBatchedEx(h, N, N, 2, 2, 2, &f1, a, CUDA_R_32F, 2, 4, b, CUDA_R_32F, 2, 4, &f0, c, CUDA_R_32F,
                                2, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Op("cublasGemmStridedBatchedEx_64",
     cublasGemmStridedBatchedEx_64(h, N, N, 2, 2, 2, &f1, a, CUDA_R_32F, 2, 4, b, CUDA_R_32F, 2, 4, &f0, c,
                                   CUDA_R_32F, 2, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The pointer-array GEMMs, 2 batches, both batches of each operand at the same matrix; the arrays in pinned memory
// (where the shim can read them).
void BatchedGemms(cublasHandle_t h, void* a, void* b, void* c) {
  const cublasOperation_t N = CUBLAS_OP_N;
  void** arrays = nullptr;
  Setup("cudaMallocHost", cudaMallocHost(reinterpret_cast<void**>(&arrays), 6 * sizeof(void*)));
  arrays[0] = arrays[1] = a;
  arrays[2] = arrays[3] = b;
  arrays[4] = arrays[5] = c;
  const void* const* A = arrays;
  const void* const* B = arrays + 2;
  void* const* C = arrays + 4;
  auto in = [](const void* const* p, auto* type) {
    return reinterpret_cast<const std::remove_pointer_t<decltype(type)>* const*>(p);
  };
  auto out = [](void* const* p, auto* type) { return reinterpret_cast<decltype(type) const*>(p); };
  float* f = nullptr;
  double* d = nullptr;
  __half* hh = nullptr;
  cuComplex* cf = nullptr;
  cuDoubleComplex* cd = nullptr;
  const float f1 = 1, f0 = 0;
  const double d1 = 1, d0 = 0;
  const __half h1 = __float2half(1.0f), h0 = __float2half(0.0f);
  const cuComplex c1 = {1, 0}, c0 = {0, 0};
  const cuDoubleComplex z1 = {1, 0}, z0 = {0, 0};
  Op("cublasSgemmBatched", cublasSgemmBatched(h, N, N, 2, 2, 2, &f1, in(A, f), 2, in(B, f), 2, &f0, out(C, f), 2, 2));
  Op("cublasSgemmBatched_64",
     cublasSgemmBatched_64(h, N, N, 2, 2, 2, &f1, in(A, f), 2, in(B, f), 2, &f0, out(C, f), 2, 2));
  Op("cublasDgemmBatched", cublasDgemmBatched(h, N, N, 2, 2, 2, &d1, in(A, d), 2, in(B, d), 2, &d0, out(C, d), 2, 2));
  Op("cublasDgemmBatched_64",
     cublasDgemmBatched_64(h, N, N, 2, 2, 2, &d1, in(A, d), 2, in(B, d), 2, &d0, out(C, d), 2, 2));
  Op("cublasHgemmBatched",
     cublasHgemmBatched(h, N, N, 2, 2, 2, &h1, in(A, hh), 2, in(B, hh), 2, &h0, out(C, hh), 2, 2));
  Op("cublasHgemmBatched_64",
     cublasHgemmBatched_64(h, N, N, 2, 2, 2, &h1, in(A, hh), 2, in(B, hh), 2, &h0, out(C, hh), 2, 2));
  Op("cublasCgemmBatched",
     cublasCgemmBatched(h, N, N, 2, 2, 2, &c1, in(A, cf), 2, in(B, cf), 2, &c0, out(C, cf), 2, 2));
  Op("cublasCgemmBatched_64",
     cublasCgemmBatched_64(h, N, N, 2, 2, 2, &c1, in(A, cf), 2, in(B, cf), 2, &c0, out(C, cf), 2, 2));
  Op("cublasZgemmBatched",
     cublasZgemmBatched(h, N, N, 2, 2, 2, &z1, in(A, cd), 2, in(B, cd), 2, &z0, out(C, cd), 2, 2));
  Op("cublasZgemmBatched_64",
     cublasZgemmBatched_64(h, N, N, 2, 2, 2, &z1, in(A, cd), 2, in(B, cd), 2, &z0, out(C, cd), 2, 2));
  Op("cublasGemmBatchedEx", cublasGemmBatchedEx(h, N, N, 2, 2, 2, &f1, A, CUDA_R_32F, 2, B, CUDA_R_32F, 2, &f0, C,
                                                CUDA_R_32F, 2, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Op("cublasGemmBatchedEx_64", cublasGemmBatchedEx_64(h, N, N, 2, 2, 2, &f1, A, CUDA_R_32F, 2, B, CUDA_R_32F, 2, &f0,
                                                      C, CUDA_R_32F, 2, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void LtMatmul(void* a, void* b, void* c) {
  cublasLtHandle_t lt = nullptr;
  Setup("cublasLtCreate", cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc = nullptr;
  Setup("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t layout = nullptr;
  Setup("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 2, 2, 2));
  const float f1 = 1, f0 = 0;
  Op("cublasLtMatmul", cublasLtMatmul(lt, desc, &f1, a, layout, b, layout, &f0, c, layout, c, layout, nullptr,
                                      nullptr, 0, nullptr));
  cublasLtMatrixLayoutDestroy(layout);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
}

void BackendGraph(cudnnHandle_t h, void* x, void* w, void* y);

// x 1x1x3x3, w 1x1x2x2, y 1x1x2x2: forward (x, w -> y), backward data (w, dy -> dx), backward filter (x, dy -> dw).
void Convolutions(void* x, void* w, void* y) {
  cudnnHandle_t h = nullptr;
  Setup("cudnnCreate", cudnnCreate(&h));
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  const int xdims[4] = {1, 1, 3, 3}, xstrides[4] = {9, 9, 3, 1}, ydims[4] = {1, 1, 2, 2}, ystrides[4] = {4, 4, 2, 1};
  const int wdims[4] = {1, 1, 2, 2}, pad[2] = {0, 0}, one[2] = {1, 1};
  Setup("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&xd) | cudnnCreateTensorDescriptor(&yd));
  Setup("cudnnSetTensorNdDescriptor", cudnnSetTensorNdDescriptor(xd, CUDNN_DATA_FLOAT, 4, xdims, xstrides) |
                                          cudnnSetTensorNdDescriptor(yd, CUDNN_DATA_FLOAT, 4, ydims, ystrides));
  Setup("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&wd));
  Setup("cudnnSetFilterNdDescriptor", cudnnSetFilterNdDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wdims));
  Setup("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(&cd));
  Setup("cudnnSetConvolutionNdDescriptor",
        cudnnSetConvolutionNdDescriptor(cd, 2, pad, one, one, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  const float f1 = 1, f0 = 0;
  Op("cudnnConvolutionForward", cudnnConvolutionForward(h, &f1, xd, x, wd, w, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                        nullptr, 0, &f0, yd, y));
  Op("cudnnConvolutionBackwardData",
     cudnnConvolutionBackwardData(h, &f1, wd, w, yd, y, cd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &f0, xd, x));
  Op("cudnnConvolutionBackwardFilter", cudnnConvolutionBackwardFilter(h, &f1, xd, x, yd, y, cd,
                                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0,
                                                                      &f0, wd, w));
  BackendGraph(h, x, w, y);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
  Setup("cudnnDestroy", cudnnDestroy(h));
}

// A one-convolution backend graph (x 1x1x3x3, w 1x1x2x2 -> y 1x1x2x2) executed; then every backend set-up entry
// point on the stand-in's knob-info descriptor, which answers the status under test.
void BackendGraph(cudnnHandle_t h, void* x, void* w, void* y) {
  {
    ttrace::shim::testing::Graph g(Die);
    ttrace::shim::testing::ConvolutionForward(g, g.Tensor(1, CUDNN_DATA_FLOAT, {1, 1, 3, 3}),
                                              g.Tensor(2, CUDNN_DATA_FLOAT, {1, 1, 2, 2}),
                                              g.Tensor(3, CUDNN_DATA_FLOAT, {1, 1, 2, 2}), /*pad=*/0, /*stride=*/1);
    Op("cudnnBackendExecute", g.Execute(h, {{1, x}, {2, w}, {3, y}}));
  }
  for (const bool update : {false, true}) {  // cuDNN's native CUDA graph API: the same graph, into a cudaGraph_t
    ttrace::shim::testing::Graph g(Die);
    ttrace::shim::testing::ConvolutionForward(g, g.Tensor(1, CUDNN_DATA_FLOAT, {1, 1, 3, 3}),
                                              g.Tensor(2, CUDNN_DATA_FLOAT, {1, 1, 2, 2}),
                                              g.Tensor(3, CUDNN_DATA_FLOAT, {1, 1, 2, 2}), /*pad=*/0, /*stride=*/1);
    cudaGraph_t graph = nullptr;
    Setup("cudaGraphCreate", cudaGraphCreate(&graph, 0));
    auto run = [&](cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack) {
      return update ? cudnnBackendUpdateCudaGraph(handle, plan, pack, graph)
                    : cudnnBackendPopulateCudaGraph(handle, plan, pack, graph);
    };
    Op(update ? "cudnnBackendUpdateCudaGraph" : "cudnnBackendPopulateCudaGraph",
       g.Run(h, {{1, x}, {2, w}, {3, y}}, run));
    Setup("cudaGraphDestroy", cudaGraphDestroy(graph));
  }
  cudnnBackendDescriptor_t knob = nullptr;
  Call("cudnnBackendCreateDescriptor", cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, &knob));
  const int64_t value = 1;
  Call("cudnnBackendSetAttribute",
       cudnnBackendSetAttribute(knob, CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &value));
  Call("cudnnBackendFinalize", cudnnBackendFinalize(knob));
  int64_t count = 0, got = 0;
  Call("cudnnBackendGetAttribute",
       cudnnBackendGetAttribute(knob, CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &count, &got));
  Call("cudnnBackendDestroyDescriptor", cudnnBackendDestroyDescriptor(knob));
}

void Collectives(void* a, void* c) {
  ncclUniqueId id;
  Setup("ncclGetUniqueId", ncclGetUniqueId(&id));
  ncclComm_t comm = nullptr, two = nullptr;
  Setup("ncclCommInitRank", ncclCommInitRank(&comm, 1, id, 0));
  Op("ncclCommInitRank.two_ranks", ncclCommInitRank(&two, 2, id, 1));
  Op("ncclAllReduce", ncclAllReduce(a, c, 4, ncclFloat, ncclSum, comm, nullptr));
  Op("ncclAllGather", ncclAllGather(a, c, 4, ncclFloat, comm, nullptr));
  Op("ncclReduceScatter", ncclReduceScatter(a, c, 4, ncclFloat, ncclSum, comm, nullptr));
  Op("ncclBroadcast", ncclBroadcast(a, c, 4, ncclFloat, 0, comm, nullptr));
  Op("ncclBcast", ncclBcast(c, 4, ncclFloat, 0, comm, nullptr));
  Op("ncclReduce", ncclReduce(a, c, 4, ncclFloat, ncclSum, 0, comm, nullptr));
  Op("ncclAlltoAll", ncclAlltoAll(a, c, 4, ncclFloat, comm, nullptr));
  Op("ncclGather", ncclGather(a, c, 4, ncclFloat, 0, comm, nullptr));
  Op("ncclScatter", ncclScatter(a, c, 4, ncclFloat, 0, comm, nullptr));
  Op("ncclSend", ncclSend(a, 4, ncclFloat, 0, comm, nullptr));
  Op("ncclRecv", ncclRecv(c, 4, ncclFloat, 0, comm, nullptr));
  Setup("ncclGroupStart", ncclGroupStart());
  Setup("ncclAllReduce.in_group", ncclAllReduce(a, c, 4, ncclFloat, ncclSum, comm, nullptr));
  Op("ncclGroupEnd", ncclGroupEnd());
  ncclResult_t async = ncclInProgress;
  Setup("ncclCommGetAsyncError", ncclCommGetAsyncError(comm, &async));
  Setup("ncclCommGetAsyncError.async", async);
  // The communicator calls the stand-in answers STANDIN_NCCL_SETUP_STATUS; each creates or
  // ends a 1-rank communicator, and each ending call gets a communicator of its own.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t configured = nullptr, scalable = nullptr, split = nullptr, shrunk = nullptr, all[1] = {nullptr};
  Call("ncclCommInitRankConfig", ncclCommInitRankConfig(&configured, 1, id, 0, &config));
  Call("ncclCommInitRankScalable", ncclCommInitRankScalable(&scalable, 1, 0, 1, &id, &config));
  Call("ncclCommSplit", ncclCommSplit(comm, 0, 0, &split, nullptr));
  int excluded[1] = {1};
  Call("ncclCommShrink", ncclCommShrink(comm, excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
  const int devices[1] = {0};
  Call("ncclCommInitAll", ncclCommInitAll(all, 1, devices));
  async = ncclInProgress;
  Call("ncclCommGetAsyncError", ncclCommGetAsyncError(split, &async));
  Call("ncclCommFinalize", ncclCommFinalize(split));
  Call("ncclCommDestroy.split", ncclCommDestroy(split));
  Call("ncclCommAbort", ncclCommAbort(configured));
  Call("ncclCommDestroy.scalable", ncclCommDestroy(scalable));
  Call("ncclCommDestroy.all", ncclCommDestroy(all[0]));
  Call("ncclCommDestroy.shrunk", ncclCommDestroy(shrunk));
  Call("ncclCommDestroy", ncclCommDestroy(comm));
}

}  // namespace

int main() {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  Setup("cudaMalloc", cudaMalloc(&a, 256) | cudaMalloc(&b, 256) | cudaMalloc(&c, 256));
  Setup("cudaMemset", cudaMemset(a, 0, 256) | cudaMemset(b, 0, 256) | cudaMemset(c, 0, 256));
  cublasHandle_t h = nullptr;
  Setup("cublasCreate_v2", cublasCreate(&h));
  Gemms(h, a, b, c);
  BatchedGemms(h, a, b, c);
  Setup("cublasDestroy_v2", cublasDestroy(h));
  LtMatmul(a, b, c);
  Convolutions(a, b, c);
  Collectives(a, c);
  Setup("cudaDeviceSynchronize", cudaDeviceSynchronize());
  return 0;
}
