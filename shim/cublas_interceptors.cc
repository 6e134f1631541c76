// cuBLAS interceptors. This file includes cublas_api.h so that an interceptor whose signature drifts from the
// vendor's declaration does not compile.
//
// Per GEMM: the record (shapes, dtypes, transposes, leading dimensions, strides, compute type, math mode, alpha
// and beta read on the host in host pointer mode, handle, stream, pointers, status); in full mode A, B (and C when
// beta may be non-zero) as they are before the call and C after it, all copied on the handle's own stream.
// Operands are captured only for calls whose arguments pass cuBLAS's documented checks: the vendor rejects the
// others, and the record alone says what was asked. Pointer-array GEMMs (cublas?gemmBatched, cublasGemmBatchedEx)
// record the arrays' addresses (kPointerArrays) and capture each operand batch by batch where the engine can locate
// them without a host sync (capture_engine.h, "Pointer arrays"); complex types are recorded, never captured.
#include <cublas_api.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/dtype.h"
#include "shim/capture_engine.h"
#include "shim/interception.h"
#include "shim/runtime.h"
#include "shim/tensor_pack.h"

#define TTRACE_LIBRARY kCublas
#define TTRACE_UNRESOLVED_STATUS CUBLAS_STATUS_NOT_INITIALIZED

namespace ttrace::shim {
namespace {

using format::TensorSlot;

LazySymbol g_get_stream(format::Library::kCublas, "cublasGetStream_v2");
LazySymbol g_get_pointer_mode(format::Library::kCublas, "cublasGetPointerMode_v2");
LazySymbol g_get_math_mode(format::Library::kCublas, "cublasGetMathMode");

// The type of alpha and beta, which follows the compute type (cuBLAS: cublasGemmEx, "scaleType").
enum class Scalar { kF32, kF16, kF64, kI32, kUnknown };

Scalar ScalarOf(int compute_type) {
  switch (compute_type) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
    case CUDA_R_16F:  // legacy cudaDataType_t compute types (C callers)
      return Scalar::kF16;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUDA_R_32F:
    case CUDA_C_32F:  // complex: the real part comes first
      return Scalar::kF32;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
    case CUDA_R_64F:
    case CUDA_C_64F:
      return Scalar::kF64;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
    case CUDA_R_32I:
      return Scalar::kI32;
    default:
      return Scalar::kUnknown;
  }
}

double ReadScalar(const void* p, Scalar type) {
  switch (type) {
    case Scalar::kF32: {
      float v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case Scalar::kF16: {
      uint16_t h;
      memcpy(&h, p, sizeof h);
      return kernels::HalfToFloat(h);
    }
    case Scalar::kF64: {
      double v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case Scalar::kI32: {
      int32_t v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case Scalar::kUnknown:
      break;
  }
  return 0;
}

struct GemmCall {
  int version;  // the caller's cuBLAS version (interception.h: vendor_version), whose helpers read the handle
  cublasHandle_t handle;
  format::GemmRecord rec;
  const void* alpha;
  const void* beta;
  Scalar scalar;
  bool device_scalars = false;  // CUBLAS_POINTER_MODE_DEVICE: alpha and beta are device pointers
  // Pointer-array GEMMs: the program's arrays of per-batch addresses (rec.a_ptr etc. hold the same values).
  const void* const* a_array = nullptr;
  const void* const* b_array = nullptr;
  const void* const* c_array = nullptr;
};

GemmCall NewGemm(int version, format::ApiId api, cublasHandle_t handle, cublasOperation_t transa,
                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha, const void* beta, Scalar scalar) {
  GemmCall c;
  memset(&c.rec, 0, sizeof c.rec);
  c.version = version;
  c.handle = handle;
  c.alpha = alpha;
  c.beta = beta;
  c.scalar = scalar;
  c.rec.api = static_cast<uint16_t>(api);
  c.rec.transa = static_cast<uint8_t>(transa);
  c.rec.transb = static_cast<uint8_t>(transb);
  c.rec.m = m;
  c.rec.n = n;
  c.rec.k = k;
  c.rec.batch_count = 1;
  c.rec.math_mode = -1;
  c.rec.handle = reinterpret_cast<uint64_t>(handle);
  return c;
}

void SetOperands(GemmCall* c, const void* a, int a_type, int64_t lda, const void* b, int b_type, int64_t ldb,
                 const void* cc, int c_type, int64_t ldc, int compute_type) {
  c->rec.a_ptr = reinterpret_cast<uint64_t>(a);
  c->rec.b_ptr = reinterpret_cast<uint64_t>(b);
  c->rec.c_ptr = reinterpret_cast<uint64_t>(cc);
  c->rec.a_type = a_type;
  c->rec.b_type = b_type;
  c->rec.c_type = c_type;
  c->rec.lda = lda;
  c->rec.ldb = ldb;
  c->rec.ldc = ldc;
  c->rec.compute_type = compute_type;
}

// Reads the handle's stream, math mode and pointer mode, and alpha/beta in host pointer mode. False when the
// handle cannot be queried (the vendor call will fail the same way): then nothing is captured.
bool ReadHandleState(GemmCall* c, cudaStream_t* stream) {
  using GetStream = decltype(&::cublasGetStream_v2);
  using GetPointerMode = decltype(&::cublasGetPointerMode_v2);
  using GetMathMode = decltype(&::cublasGetMathMode);
  format::GemmRecord& r = c->rec;
  r.flags |= format::kScalarsUnknown;
  auto get_stream = reinterpret_cast<GetStream>(g_get_stream.Get(c->version));
  if (get_stream == nullptr || get_stream(c->handle, stream) != CUBLAS_STATUS_SUCCESS) return false;
  r.stream = reinterpret_cast<uint64_t>(*stream);
  cublasMath_t math;
  auto get_math = reinterpret_cast<GetMathMode>(g_get_math_mode.Get(c->version));
  if (get_math != nullptr && get_math(c->handle, &math) == CUBLAS_STATUS_SUCCESS) r.math_mode = math;
  cublasPointerMode_t mode;
  auto get_mode = reinterpret_cast<GetPointerMode>(g_get_pointer_mode.Get(c->version));
  const bool mode_known = get_mode != nullptr && get_mode(c->handle, &mode) == CUBLAS_STATUS_SUCCESS;
  c->device_scalars = mode_known && mode == CUBLAS_POINTER_MODE_DEVICE;
  if (mode_known && mode == CUBLAS_POINTER_MODE_HOST && c->alpha != nullptr && c->beta != nullptr &&
      c->scalar != Scalar::kUnknown) {
    r.alpha = ReadScalar(c->alpha, c->scalar);
    r.beta = ReadScalar(c->beta, c->scalar);
    r.flags &= ~format::kScalarsUnknown;
  }
  return true;
}

bool ValidOp(uint8_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// cuBLAS's documented argument checks (CUBLAS_STATUS_INVALID_VALUE otherwise).
bool ValidArguments(const format::GemmRecord& r) {
  if (!ValidOp(r.transa) || !ValidOp(r.transb) || r.m < 0 || r.n < 0 || r.k < 0 || r.batch_count < 0) return false;
  const int64_t a_rows = r.transa == CUBLAS_OP_N ? r.m : r.k;
  const int64_t b_rows = r.transb == CUBLAS_OP_N ? r.k : r.n;
  return r.lda >= std::max<int64_t>(1, a_rows) && r.ldb >= std::max<int64_t>(1, b_rows) &&
         r.ldc >= std::max<int64_t>(1, r.m);
}

TensorSpec Operand(const GemmCall& c, TensorSlot slot) {
  const format::GemmRecord& r = c.rec;
  TensorSpec t;
  t.slot = slot;
  t.batch = r.batch_count;
  t.ptr_array = slot == TensorSlot::kA ? c.a_array : slot == TensorSlot::kB ? c.b_array : c.c_array;
  switch (slot) {
    case TensorSlot::kA:
      t.dtype = DTypeFromCuda(r.a_type);
      t.ptr = reinterpret_cast<const void*>(r.a_ptr);
      t.rows = r.transa == CUBLAS_OP_N ? r.m : r.k;
      t.cols = r.transa == CUBLAS_OP_N ? r.k : r.m;
      t.ld = r.lda;
      t.batch_stride = r.stride_a;
      break;
    case TensorSlot::kB:
      t.dtype = DTypeFromCuda(r.b_type);
      t.ptr = reinterpret_cast<const void*>(r.b_ptr);
      t.rows = r.transb == CUBLAS_OP_N ? r.k : r.n;
      t.cols = r.transb == CUBLAS_OP_N ? r.n : r.k;
      t.ld = r.ldb;
      t.batch_stride = r.stride_b;
      break;
    default:
      t.dtype = DTypeFromCuda(r.c_type);
      t.ptr = reinterpret_cast<const void*>(r.c_ptr);
      t.rows = r.m;
      t.cols = r.n;
      t.ld = r.ldc;
      t.batch_stride = r.stride_c;
      break;
  }
  return t;
}

void Capture(TensorGroup* group, const GemmCall& c, TensorSlot slot) {
  const format::GemmRecord& r = c.rec;
  TensorSpec t = Operand(c, slot);
  if (t.ptr_array != nullptr) t.ptr = nullptr;  // a_ptr .. c_ptr are the arrays' addresses
  if (t.dtype == format::DType::kInvalid) {
    group->engine()->Drop(r.seq, "operand type " + std::to_string(slot == TensorSlot::kA   ? r.a_type
                                                         : slot == TensorSlot::kB ? r.b_type
                                                                                  : r.c_type) +
                            " has no ttrace dtype");
    return;
  }
  group->Add(t);
}

void SetBatches(GemmCall* c, int64_t batch_count, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  c->rec.batch_count = batch_count;
  c->rec.stride_a = stride_a;
  c->rec.stride_b = stride_b;
  c->rec.stride_c = stride_c;
}

void SetPointerArrays(GemmCall* c, int64_t batch_count, const void* const* a, const void* const* b,
                      const void* const* cc) {
  c->rec.batch_count = batch_count;
  c->rec.flags |= format::kPointerArrays;
  c->a_array = a;
  c->b_array = b;
  c->c_array = cc;
}

// Snapshots a device-resident alpha or beta (one element of the scalar type) on the call's stream, just before
// the call reads it.
void CaptureScalar(TensorGroup* group, const GemmCall& c, TensorSlot slot) {
  TensorSpec t;
  t.slot = slot;
  t.dtype = c.scalar == Scalar::kF16   ? format::DType::kF16
            : c.scalar == Scalar::kF32 ? format::DType::kF32
            : c.scalar == Scalar::kF64 ? format::DType::kF64
            : c.scalar == Scalar::kI32 ? format::DType::kI32
                                       : format::DType::kInvalid;
  t.ptr = slot == TensorSlot::kAlpha ? c.alpha : c.beta;
  t.rows = t.cols = t.ld = 1;
  if (t.dtype != format::DType::kInvalid && t.ptr != nullptr) group->Add(t);
}

template <typename Real>
cublasStatus_t TraceGemm(GemmCall* c, const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  format::GemmRecord& r = c->rec;
  r.seq = slot.seq;
  r.t_ns = MonotonicNs();
  cudaStream_t stream = nullptr;
  const bool capture = ReadHandleState(c, &stream) && engine->capturing_tensors() && ValidArguments(r);
  if (capture) {  // the inputs: one group (one event)
    TensorGroup inputs(engine, r.seq, stream);
    if (c->device_scalars) {
      CaptureScalar(&inputs, *c, TensorSlot::kAlpha);
      CaptureScalar(&inputs, *c, TensorSlot::kBeta);
    }
    Capture(&inputs, *c, TensorSlot::kA);
    Capture(&inputs, *c, TensorSlot::kB);
    if ((r.flags & format::kScalarsUnknown) || r.beta != 0) Capture(&inputs, *c, TensorSlot::kCIn);
  }
  const cublasStatus_t status = real();
  if (capture && status == CUBLAS_STATUS_SUCCESS) {
    TensorGroup output(engine, r.seq, stream);
    Capture(&output, *c, TensorSlot::kCOut);
  }
  r.status = status;
  engine->Publish(slot, format::RecordType::kGemm, r);
  return status;
}

}  // namespace
}  // namespace ttrace::shim

using ttrace::format::ApiId;
using ttrace::shim::GemmCall;
using ttrace::shim::NewGemm;
using ttrace::shim::Scalar;
using ttrace::shim::ScalarOf;
using ttrace::shim::SetBatches;
using ttrace::shim::SetOperands;
using ttrace::shim::SetPointerArrays;
using ttrace::shim::TraceGemm;

// The typed entry points: one macro per family, the only differences being the scalar type, the CUDA data type
// and the compute type recorded (the analyzer derives the effective one from the api and the math mode).
#define TTRACE_TYPED_GEMM(name, id, Int, T, cuda_type, compute, scalar)                                          \
  TTRACE_INTERCEPTOR(cublasStatus_t, name,                                                                     \
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m, Int n,  \
                      Int k, const T* alpha, const T* A, Int lda, const T* B, Int ldb, const T* beta, T* C,     \
                      Int ldc),                                                                                \
                     (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)) {                 \
    GemmCall c = NewGemm(vendor_version, ApiId::id, handle, transa, transb, m, n, k, alpha, beta, scalar);     \
    SetOperands(&c, A, cuda_type, lda, B, cuda_type, ldb, C, cuda_type, ldc, compute);                         \
    return TraceGemm(&c, [&] {                                                                                 \
      return REAL(name)(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);                  \
    });                                                                                                        \
  }

#define TTRACE_TYPED_GEMM_STRIDED(name, id, Int, T, cuda_type, compute, scalar)                                  \
  TTRACE_INTERCEPTOR(cublasStatus_t, name,                                                                     \
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m, Int n,  \
                      Int k, const T* alpha, const T* A, Int lda, long long int strideA, const T* B, Int ldb,   \
                      long long int strideB, const T* beta, T* C, Int ldc, long long int strideC,               \
                      Int batchCount),                                                                         \
                     (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,   \
                      strideC, batchCount)) {                                                                  \
    GemmCall c = NewGemm(vendor_version, ApiId::id, handle, transa, transb, m, n, k, alpha, beta, scalar);     \
    SetOperands(&c, A, cuda_type, lda, B, cuda_type, ldb, C, cuda_type, ldc, compute);                         \
    SetBatches(&c, batchCount, strideA, strideB, strideC);                                                     \
    return TraceGemm(&c, [&] {                                                                                 \
      return REAL(name)(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, \
                        strideC, batchCount);                                                                  \
    });                                                                                                        \
  }

TTRACE_TYPED_GEMM(cublasSgemm_v2, kCublasSgemm, int, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, Scalar::kF32)
TTRACE_TYPED_GEMM(cublasSgemm_v2_64, kCublasSgemm64, int64_t, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, Scalar::kF32)
TTRACE_TYPED_GEMM(cublasDgemm_v2, kCublasDgemm, int, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, Scalar::kF64)
TTRACE_TYPED_GEMM(cublasDgemm_v2_64, kCublasDgemm64, int64_t, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, Scalar::kF64)
TTRACE_TYPED_GEMM(cublasHgemm, kCublasHgemm, int, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F, Scalar::kF16)
TTRACE_TYPED_GEMM(cublasHgemm_64, kCublasHgemm64, int64_t, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F, Scalar::kF16)
TTRACE_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched, kCublasSgemmStridedBatched, int, float, CUDA_R_32F,
                          CUBLAS_COMPUTE_32F, Scalar::kF32)
TTRACE_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched_64, kCublasSgemmStridedBatched64, int64_t, float, CUDA_R_32F,
                          CUBLAS_COMPUTE_32F, Scalar::kF32)
TTRACE_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched, kCublasDgemmStridedBatched, int, double, CUDA_R_64F,
                          CUBLAS_COMPUTE_64F, Scalar::kF64)
TTRACE_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched_64, kCublasDgemmStridedBatched64, int64_t, double, CUDA_R_64F,
                          CUBLAS_COMPUTE_64F, Scalar::kF64)
TTRACE_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched, kCublasHgemmStridedBatched, int, __half, CUDA_R_16F,
                          CUBLAS_COMPUTE_16F, Scalar::kF16)
TTRACE_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched_64, kCublasHgemmStridedBatched64, int64_t, __half, CUDA_R_16F,
                          CUBLAS_COMPUTE_16F, Scalar::kF16)

// cublasGemmEx and cublasGemmStridedBatchedEx, in their int and _64 forms: types and compute type as passed.
#define TTRACE_GEMM_EX(name, id, Int)                                                                          \
  TTRACE_INTERCEPTOR(cublasStatus_t, name,                                                                     \
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m, Int n,  \
                      Int k, const void* alpha, const void* A, cudaDataType Atype, Int lda, const void* B,      \
                      cudaDataType Btype, Int ldb, const void* beta, void* C, cudaDataType Ctype, Int ldc,      \
                      cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                 \
                     (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,     \
                      ldc, computeType, algo)) {                                                               \
    GemmCall c = NewGemm(vendor_version, ApiId::id, handle, transa, transb, m, n, k, alpha, beta,              \
                         ScalarOf(computeType));                                                               \
    SetOperands(&c, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc, computeType);                                 \
    return TraceGemm(&c, [&] {                                                                                 \
      return REAL(name)(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,  \
                        ldc, computeType, algo);                                                               \
    });                                                                                                        \
  }

#define TTRACE_GEMM_STRIDED_EX(name, id, Int)                                                                  \
  TTRACE_INTERCEPTOR(cublasStatus_t, name,                                                                     \
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m, Int n,  \
                      Int k, const void* alpha, const void* A, cudaDataType Atype, Int lda,                    \
                      long long int strideA, const void* B, cudaDataType Btype, Int ldb, long long int strideB, \
                      const void* beta, void* C, cudaDataType Ctype, Int ldc, long long int strideC,            \
                      Int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo),                 \
                     (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,   \
                      beta, C, Ctype, ldc, strideC, batchCount, computeType, algo)) {                          \
    GemmCall c = NewGemm(vendor_version, ApiId::id, handle, transa, transb, m, n, k, alpha, beta,              \
                         ScalarOf(computeType));                                                               \
    SetOperands(&c, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc, computeType);                                 \
    SetBatches(&c, batchCount, strideA, strideB, strideC);                                                     \
    return TraceGemm(&c, [&] {                                                                                 \
      return REAL(name)(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, \
                        beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);                          \
    });                                                                                                        \
  }

TTRACE_GEMM_EX(cublasGemmEx, kCublasGemmEx, int)
TTRACE_GEMM_EX(cublasGemmEx_64, kCublasGemmEx64, int64_t)
TTRACE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, kCublasGemmStridedBatchedEx, int)
TTRACE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, kCublasGemmStridedBatchedEx64, int64_t)

// Pointer-array batched GEMMs: the typed ones (complex C and Z included: recorded, operands of no ttrace dtype)
// and cublasGemmBatchedEx. The record's a_ptr .. c_ptr hold the arrays' addresses.
#define TTRACE_TYPED_GEMM_BATCHED(name, id, Int, T, cuda_type, compute, scalar)                                  \
  TTRACE_INTERCEPTOR(cublasStatus_t, name,                                                                     \
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m, Int n,  \
                      Int k, const T* alpha, const T* const Aarray[], Int lda, const T* const Barray[], Int ldb, \
                      const T* beta, T* const Carray[], Int ldc, Int batchCount),                               \
                     (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,      \
                      batchCount)) {                                                                           \
    GemmCall c = NewGemm(vendor_version, ApiId::id, handle, transa, transb, m, n, k, alpha, beta, scalar);     \
    SetOperands(&c, Aarray, cuda_type, lda, Barray, cuda_type, ldb, Carray, cuda_type, ldc, compute);          \
    SetPointerArrays(&c, batchCount, reinterpret_cast<const void* const*>(Aarray),                             \
                     reinterpret_cast<const void* const*>(Barray), reinterpret_cast<const void* const*>(Carray)); \
    return TraceGemm(&c, [&] {                                                                                 \
      return REAL(name)(handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,   \
                        batchCount);                                                                           \
    });                                                                                                        \
  }

TTRACE_TYPED_GEMM_BATCHED(cublasSgemmBatched, kCublasSgemmBatched, int, float, CUDA_R_32F, CUBLAS_COMPUTE_32F,
                          Scalar::kF32)
TTRACE_TYPED_GEMM_BATCHED(cublasSgemmBatched_64, kCublasSgemmBatched64, int64_t, float, CUDA_R_32F,
                          CUBLAS_COMPUTE_32F, Scalar::kF32)
TTRACE_TYPED_GEMM_BATCHED(cublasDgemmBatched, kCublasDgemmBatched, int, double, CUDA_R_64F, CUBLAS_COMPUTE_64F,
                          Scalar::kF64)
TTRACE_TYPED_GEMM_BATCHED(cublasDgemmBatched_64, kCublasDgemmBatched64, int64_t, double, CUDA_R_64F,
                          CUBLAS_COMPUTE_64F, Scalar::kF64)
TTRACE_TYPED_GEMM_BATCHED(cublasHgemmBatched, kCublasHgemmBatched, int, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F,
                          Scalar::kF16)
TTRACE_TYPED_GEMM_BATCHED(cublasHgemmBatched_64, kCublasHgemmBatched64, int64_t, __half, CUDA_R_16F,
                          CUBLAS_COMPUTE_16F, Scalar::kF16)
TTRACE_TYPED_GEMM_BATCHED(cublasCgemmBatched, kCublasCgemmBatched, int, cuComplex, CUDA_C_32F, CUBLAS_COMPUTE_32F,
                          Scalar::kF32)
TTRACE_TYPED_GEMM_BATCHED(cublasCgemmBatched_64, kCublasCgemmBatched64, int64_t, cuComplex, CUDA_C_32F,
                          CUBLAS_COMPUTE_32F, Scalar::kF32)
TTRACE_TYPED_GEMM_BATCHED(cublasZgemmBatched, kCublasZgemmBatched, int, cuDoubleComplex, CUDA_C_64F,
                          CUBLAS_COMPUTE_64F, Scalar::kF64)
TTRACE_TYPED_GEMM_BATCHED(cublasZgemmBatched_64, kCublasZgemmBatched64, int64_t, cuDoubleComplex, CUDA_C_64F,
                          CUBLAS_COMPUTE_64F, Scalar::kF64)

#define TTRACE_GEMM_BATCHED_EX(name, id, Int)                                                                  \
  TTRACE_INTERCEPTOR(cublasStatus_t, name,                                                                     \
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m, Int n,  \
                      Int k, const void* alpha, const void* const Aarray[], cudaDataType Atype, Int lda,        \
                      const void* const Barray[], cudaDataType Btype, Int ldb, const void* beta,                \
                      void* const Carray[], cudaDataType Ctype, Int ldc, Int batchCount,                        \
                      cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                 \
                     (handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta,     \
                      Carray, Ctype, ldc, batchCount, computeType, algo)) {                                    \
    GemmCall c = NewGemm(vendor_version, ApiId::id, handle, transa, transb, m, n, k, alpha, beta,              \
                         ScalarOf(computeType));                                                               \
    SetOperands(&c, Aarray, Atype, lda, Barray, Btype, ldb, Carray, Ctype, ldc, computeType);                  \
    SetPointerArrays(&c, batchCount, Aarray, Barray, const_cast<const void* const*>(Carray));                  \
    return TraceGemm(&c, [&] {                                                                                 \
      return REAL(name)(handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta,   \
                        Carray, Ctype, ldc, batchCount, computeType, algo);                                    \
    });                                                                                                        \
  }

TTRACE_GEMM_BATCHED_EX(cublasGemmBatchedEx, kCublasGemmBatchedEx, int)
TTRACE_GEMM_BATCHED_EX(cublasGemmBatchedEx_64, kCublasGemmBatchedEx64, int64_t)
