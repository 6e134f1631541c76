// A stand-in libcublas.so.12 for tests: the version node NVIDIA's cuBLAS 12 exports (libcublas.so.12), and the
// entry points a CUDA 12 program and the shim call, each forwarding to the cuBLAS 13 next to it (simgpu's, found
// with dlopen(RTLD_LOCAL) + dlvsym(..., "libcublas.so.13"), so never through an interposer). A program linked
// against it binds cublasGemmEx@libcublas.so.12, as one built with CUDA 12 does. standin_cublas12_calls()
// counts the forwarded GEMMs, so a test can tell which major served a call.
#include <cublas_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<long> g_gemms{0};

void* Real(const char* name) {
  static void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  void* fn = lib != nullptr ? dlvsym(lib, name, "libcublas.so.13") : nullptr;
  if (fn == nullptr) {
    fprintf(stderr, "cublas12 stand-in: no %s in libcublas.so.13\n", name);
    abort();
  }
  return fn;
}

}  // namespace

#define STANDIN_FORWARD(counted, name, params, args)                        \
  extern "C" cublasStatus_t name params {                                   \
    static auto real = reinterpret_cast<cublasStatus_t(*) params>(Real(#name)); \
    if (counted) ++g_gemms;                                                 \
    return real args;                                                       \
  }

extern "C" long standin_cublas12_calls() { return g_gemms.load(); }

STANDIN_FORWARD(false, cublasCreate_v2, (cublasHandle_t * handle), (handle))
STANDIN_FORWARD(false, cublasDestroy_v2, (cublasHandle_t handle), (handle))
STANDIN_FORWARD(false, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
STANDIN_FORWARD(false, cublasGetStream_v2, (cublasHandle_t handle, cudaStream_t* stream), (handle, stream))
STANDIN_FORWARD(false, cublasGetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t* mode), (handle, mode))
STANDIN_FORWARD(false, cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode), (handle, mode))
STANDIN_FORWARD(false, cublasGetMathMode, (cublasHandle_t handle, cublasMath_t* mode), (handle, mode))
STANDIN_FORWARD(false, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
STANDIN_FORWARD(true, cublasSgemm_v2,
                (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                 const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C,
                 int ldc),
                (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
STANDIN_FORWARD(true, cublasGemmEx,
                (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                 const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                 int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                 cublasGemmAlgo_t algo),
                (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                 computeType, algo))
