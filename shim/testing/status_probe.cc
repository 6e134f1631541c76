// shim_status_probe: calls every intercepted entry point (and a few cudart calls the shim does not intercept)
// with valid and invalid arguments and prints "call=status" lines. Run with and without LD_PRELOAD=libttrace.so,
// against NVIDIA's libraries (no GPU: most calls fail) or simgpu: the outputs must be identical.
// Built against the real headers and linked to the toolkit's shared libraries, like any application.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace {

void Print(const char* call, int status) { printf("%s=%d\n", call, status); }

// cuDNN's backend API: descriptors (host objects), an incomplete graph, executions that must fail.
void ProbeCudnnBackend(cudnnHandle_t h) {
  cudnnBackendDescriptor_t t = nullptr, plan = nullptr, pack = nullptr;
  Print("cudnnBackendCreateDescriptor.tensor", cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
  Print("cudnnBackendCreateDescriptor.bad_type",
        cudnnBackendCreateDescriptor(static_cast<cudnnBackendDescriptorType_t>(9999), &plan));
  const int64_t dims[4] = {1, 2, 3, 4}, uid = 5;
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  Print("cudnnBackendSetAttribute.dims",
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
  Print("cudnnBackendSetAttribute.wrong_type",
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_FLOAT, 1, &uid));
  Print("cudnnBackendSetAttribute.type", cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                                                  CUDNN_TYPE_DATA_TYPE, 1, &type));
  Print("cudnnBackendFinalize.incomplete", cudnnBackendFinalize(t));
  int64_t count = -1;
  Print("cudnnBackendGetAttribute.unfinalized",
        cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, &count, nullptr));
  Print("cudnnBackendCreateDescriptor.plan",
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
  Print("cudnnBackendCreateDescriptor.pack",
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
  Print("cudnnBackendExecute.unfinalized_plan", cudnnBackendExecute(h, plan, pack));
  Print("cudnnBackendExecute.null_plan", cudnnBackendExecute(h, nullptr, pack));
  // cuDNN's native CUDA graph API with the same plans: must fail the same way (no graph is touched).
  Print("cudnnBackendPopulateCudaGraph.unfinalized_plan", cudnnBackendPopulateCudaGraph(h, plan, pack, nullptr));
  Print("cudnnBackendPopulateCudaGraph.null_plan", cudnnBackendPopulateCudaGraph(h, nullptr, pack, nullptr));
  Print("cudnnBackendUpdateCudaGraph.unfinalized_plan", cudnnBackendUpdateCudaGraph(h, plan, pack, nullptr));
  Print("cudnnBackendUpdateCudaGraph.null_plan", cudnnBackendUpdateCudaGraph(h, nullptr, pack, nullptr));
  for (cudnnBackendDescriptor_t d : {t, plan, pack})
    if (d != nullptr) Print("cudnnBackendDestroyDescriptor", cudnnBackendDestroyDescriptor(d));
}

// cuDNN's legacy convolutions, valid and invalid (descriptors are host objects: they work without a GPU).
void ProbeCudnn(float* x, float* w, float* y) {
  const float alpha = 1.0f, beta = 0.0f;
  cudnnHandle_t h = nullptr;
  Print("cudnnCreate", cudnnCreate(&h));
  cudnnTensorDescriptor_t xd, yd, bad_yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  Print("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&xd));
  Print("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&yd));
  Print("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&bad_yd));
  Print("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&wd));
  Print("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(&cd));
  Print("cudnnSetTensor4dDescriptor", cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 5, 5));
  Print("cudnnSetTensor4dDescriptor", cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 5, 5));
  Print("cudnnSetTensor4dDescriptor",
        cudnnSetTensor4dDescriptor(bad_yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 4, 4));
  Print("cudnnSetFilter4dDescriptor", cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 2, 3, 3));
  Print("cudnnSetConvolution2dDescriptor",
        cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  const auto fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  Print("cudnnConvolutionForward.valid",
        cudnnConvolutionForward(h, &alpha, xd, x, wd, w, cd, fwd, nullptr, 0, &beta, yd, y));
  Print("cudnnConvolutionForward.null_handle",
        cudnnConvolutionForward(nullptr, &alpha, xd, x, wd, w, cd, fwd, nullptr, 0, &beta, yd, y));
  Print("cudnnConvolutionForward.bad_output_shape",
        cudnnConvolutionForward(h, &alpha, xd, x, wd, w, cd, fwd, nullptr, 0, &beta, bad_yd, y));
  Print("cudnnConvolutionBackwardData.valid",
        cudnnConvolutionBackwardData(h, &alpha, wd, w, yd, y, cd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &beta,
                                     xd, x));
  Print("cudnnConvolutionBackwardFilter.valid",
        cudnnConvolutionBackwardFilter(h, &alpha, xd, x, yd, y, cd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0,
                                       &beta, wd, w));
  Print("cudnnConvolutionBackwardFilter.null_data",
        cudnnConvolutionBackwardFilter(h, &alpha, xd, nullptr, yd, y, cd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr,
                                       0, &beta, wd, w));
  ProbeCudnnBackend(h);
  if (h != nullptr) Print("cudnnDestroy", cudnnDestroy(h));
}

// Pointer-array GEMMs, the arrays in pageable host memory (valid for the vendor on a system with HMM, unknown to
// the driver otherwise). The complex ones are looked up in the loaded libcublas (simgpu has none: then a
// "no_..." line that is not an op).
void ProbeBatched(cublasHandle_t h, float* a, float* b, float* c) {
  const cublasOperation_t N = CUBLAS_OP_N;
  static void* arrays[6];
  arrays[0] = arrays[1] = a;
  arrays[2] = arrays[3] = b;
  arrays[4] = arrays[5] = c;
  auto* fa = reinterpret_cast<const float* const*>(arrays);
  auto* fb = reinterpret_cast<const float* const*>(arrays + 2);
  auto* fc = reinterpret_cast<float* const*>(arrays + 4);
  const float one = 1, zero = 0;
  Print("cublasSgemmBatched.valid", cublasSgemmBatched(h, N, N, 4, 4, 4, &one, fa, 4, fb, 4, &zero, fc, 4, 2));
  Print("cublasSgemmBatched.negative_batch",
        cublasSgemmBatched(h, N, N, 4, 4, 4, &one, fa, 4, fb, 4, &zero, fc, 4, -1));
  Print("cublasGemmBatchedEx.valid",
        cublasGemmBatchedEx(h, N, N, 4, 4, 4, &one, arrays, CUDA_R_32F, 4, arrays + 2, CUDA_R_32F, 4, &zero,
                            arrays + 4, CUDA_R_32F, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Print("cublasGemmBatchedEx_64.bad_lda",
        cublasGemmBatchedEx_64(h, N, N, 4, 4, 4, &one, arrays, CUDA_R_32F, 2, arrays + 2, CUDA_R_32F, 4, &zero,
                               arrays + 4, CUDA_R_32F, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
  using Cgemm = decltype(&cublasCgemmBatched);
  using Zgemm = decltype(&cublasZgemmBatched);
  auto cgemm = reinterpret_cast<Cgemm>(lib != nullptr ? dlsym(lib, "cublasCgemmBatched") : nullptr);
  auto zgemm = reinterpret_cast<Zgemm>(lib != nullptr ? dlsym(lib, "cublasZgemmBatched") : nullptr);
  const cuComplex c1 = {1, 0}, c0 = {0, 0};
  const cuDoubleComplex z1 = {1, 0}, z0 = {0, 0};
  if (cgemm == nullptr) {
    Print("no_cublasCgemmBatched", 1);
  } else {
    Print("cublasCgemmBatched.valid",
          cgemm(h, N, N, 2, 2, 2, &c1, reinterpret_cast<const cuComplex* const*>(arrays), 2,
                reinterpret_cast<const cuComplex* const*>(arrays + 2), 2, &c0,
                reinterpret_cast<cuComplex* const*>(arrays + 4), 2, 2));
  }
  if (zgemm == nullptr) {
    Print("no_cublasZgemmBatched", 1);
  } else {
    Print("cublasZgemmBatched.valid",
          zgemm(h, N, N, 2, 2, 2, &z1, reinterpret_cast<const cuDoubleComplex* const*>(arrays), 2,
                reinterpret_cast<const cuDoubleComplex* const*>(arrays + 2), 2, &z0,
                reinterpret_cast<cuDoubleComplex* const*>(arrays + 4), 2, 2));
  }
}

}  // namespace

int main() {
  int devices = -1;
  Print("cudaGetDeviceCount", cudaGetDeviceCount(&devices));
  float* buf = nullptr;
  const cudaError_t malloc_status = cudaMalloc(reinterpret_cast<void**>(&buf), 64 * 64 * sizeof(float) * 3);
  Print("cudaMalloc", malloc_status);
  if (malloc_status == cudaSuccess) {
    static float host[64 * 64 * 3];
    for (int i = 0; i < 64 * 64 * 3; ++i) host[i] = static_cast<float>(i % 7) - 3.0f;
    Print("cudaMemcpy", cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice));
  }
  float* A = buf;
  float* B = buf ? buf + 64 * 64 : nullptr;
  float* C = buf ? buf + 2 * 64 * 64 : nullptr;
  const float alpha = 1.0f, beta = 0.0f;
  const __half half_alpha = __float2half(0.75f), half_beta = __float2half(0.25f);

  cublasHandle_t handle = nullptr;
  Print("cublasCreate_v2", cublasCreate(&handle));
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  // The first captured GEMM (the shim allocates its pinned ring then) while this thread has a global-mode graph
  // capture open on another stream: the capture must survive.
  cudaStream_t gemm_stream = nullptr, graph_stream = nullptr;
  Print("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&gemm_stream, cudaStreamNonBlocking));
  Print("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&graph_stream, cudaStreamNonBlocking));
  Print("cublasSetStream_v2", cublasSetStream(handle, gemm_stream));
  Print("cudaStreamBeginCapture", cudaStreamBeginCapture(graph_stream, cudaStreamCaptureModeGlobal));
  Print("cublasSgemm_v2.beside_capture", cublasSgemm(handle, N, N, 8, 8, 8, &alpha, A, 8, B, 8, &beta, C, 8));
  cudaGraph_t graph = nullptr;
  Print("cudaStreamEndCapture", cudaStreamEndCapture(graph_stream, &graph));
  if (graph != nullptr) Print("cudaGraphDestroy", cudaGraphDestroy(graph));
  Print("cudaStreamSynchronize", cudaStreamSynchronize(gemm_stream));
  Print("cublasSetStream_v2", cublasSetStream(handle, nullptr));
  Print("cublasSgemm_v2.valid", cublasSgemm(handle, N, N, 8, 8, 8, &alpha, A, 8, B, 8, &beta, C, 8));
  Print("cublasSgemm_v2.null_handle", cublasSgemm(nullptr, N, N, 8, 8, 8, &alpha, A, 8, B, 8, &beta, C, 8));
  Print("cublasSgemm_v2.negative_m", cublasSgemm(handle, N, N, -1, 8, 8, &alpha, A, 8, B, 8, &beta, C, 8));
  Print("cublasSgemm_v2.bad_lda", cublasSgemm(handle, N, N, 8, 8, 8, &alpha, A, 4, B, 8, &beta, C, 8));
  Print("cublasSgemm_v2.bad_op", cublasSgemm(handle, static_cast<cublasOperation_t>(9), N, 8, 8, 8, &alpha, A, 8,
                                             B, 8, &beta, C, 8));
  Print("cublasSgemm_v2_64.valid", cublasSgemm_64(handle, T, N, 8, 8, 8, &alpha, A, 8, B, 8, &beta, C, 8));
  Print("cublasSgemm_v2_64.bad_ldc", cublasSgemm_64(handle, N, N, 8, 8, 8, &alpha, A, 8, B, 8, &beta, C, 4));
  Print("cublasGemmEx.valid", cublasGemmEx(handle, N, T, 8, 8, 8, &alpha, A, CUDA_R_32F, 8, B, CUDA_R_32F, 8, &beta,
                                           C, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Print("cublasGemmEx.negative_k", cublasGemmEx(handle, N, N, 8, 8, -2, &alpha, A, CUDA_R_32F, 8, B, CUDA_R_32F, 8,
                                                &beta, C, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Print("cublasGemmEx.bad_ldb", cublasGemmEx(handle, N, N, 8, 8, 8, &alpha, A, CUDA_R_32F, 8, B, CUDA_R_32F, 2, &beta,
                                             C, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Print("cublasGemmEx.half_compute_on_float",
        cublasGemmEx(handle, N, N, 8, 8, 8, &half_alpha, A, CUDA_R_32F, 8, B, CUDA_R_32F, 8, &half_beta, C, CUDA_R_32F,
                     8, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
  Print("cublasGemmStridedBatchedEx.valid",
        cublasGemmStridedBatchedEx(handle, N, N, 4, 4, 4, &alpha, A, CUDA_R_32F, 4, 16, B, CUDA_R_32F, 4, 16, &beta, C,
                                   CUDA_R_32F, 4, 16, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  Print("cublasGemmStridedBatchedEx.negative_batch",
        cublasGemmStridedBatchedEx(handle, N, N, 4, 4, 4, &alpha, A, CUDA_R_32F, 4, 16, B, CUDA_R_32F, 4, 16, &beta, C,
                                   CUDA_R_32F, 4, 16, -1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  ProbeBatched(handle, A, B, C);
  if (handle != nullptr) Print("cublasDestroy_v2", cublasDestroy(handle));
  ProbeCudnn(A, B, C);

  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  Print("ncclGetUniqueId", ncclGetUniqueId(&id));
  ncclComm_t comm = nullptr;
  Print("ncclCommInitRank.bad_rank", ncclCommInitRank(&comm, 2, id, 5));
  Print("ncclCommInitRank.null_comm", ncclCommInitRank(nullptr, 1, id, 0));
  const ncclResult_t init = ncclCommInitRank(&comm, 1, id, 0);
  Print("ncclCommInitRank.valid", init);
  if (init != ncclSuccess) comm = nullptr;
  ncclComm_t all[2] = {nullptr, nullptr};
  Print("ncclCommInitAll.zero_devices", ncclCommInitAll(all, 0, nullptr));
  Print("ncclAllReduce.null_comm", ncclAllReduce(A, C, 16, ncclFloat, ncclSum, nullptr, nullptr));
  Print("ncclAllReduce.bad_dtype",
        ncclAllReduce(A, C, 16, static_cast<ncclDataType_t>(ncclNumTypes), ncclSum, comm, nullptr));
  Print("ncclAllReduce.bad_op", ncclAllReduce(A, C, 16, ncclFloat, static_cast<ncclRedOp_t>(77), comm, nullptr));
  Print("ncclAllReduce.valid", ncclAllReduce(A, C, 16, ncclFloat, ncclSum, comm, nullptr));
  Print("ncclGroupEnd.unbalanced", ncclGroupEnd());
  Print("ncclGroupStart", ncclGroupStart());
  Print("ncclAllReduce.in_group", ncclAllReduce(A, A, 16, ncclFloat, ncclMax, comm, nullptr));
  Print("ncclGroupEnd", ncclGroupEnd());
  if (comm != nullptr) Print("ncclCommDestroy", ncclCommDestroy(comm));
  Print("ncclCommDestroy.null", ncclCommDestroy(nullptr));
  Print("cudaDeviceSynchronize", cudaDeviceSynchronize());
  if (buf != nullptr) Print("cudaFree", cudaFree(buf));
  return 0;
}
