// cuBLASLt interceptors. This file includes cublasLt.h so that an interceptor whose signature drifts from the
// vendor's declaration does not compile.
//
// cublasLtMatmul carries its whole problem in opaque descriptors, which the application may destroy as soon as the
// call returns: the record is therefore filled at the call, through the vendor's own getters
// (cublasLtMatmulDescGetAttribute, cublasLtMatrixLayoutGetAttribute) of the caller's cuBLASLt version, host-side.
// Attributes an older library does not answer keep cuBLASLt's defaults; when an essential one (types, transposes,
// epilogue, a layout) cannot be read the record says so (kLtDescUnreadable) and nothing is captured.
//
// Operands, all on the call's stream: A, B, C (when beta may be non-zero), the bias, the aux input of the backward
// epilogues, FP8 scales and device-mode alpha/beta before the call; D, the aux output, the bias gradient and the
// amax values after it. Only layouts the analyzer can read are captured: orders COL and ROW (a ROW matrix is
// stored as its column-major transpose, docs/format.md), strided batches; other orders are recorded and their
// operands dropped with a notice that says why. Only calls whose layouts agree with each other are captured:
// cuBLASLt rejects the others and the record alone says what was asked.
//
// cuBLAS calls cuBLASLt internally; such an inner call passes straight through (interception.h), so a cuBLAS GEMM
// is recorded once, as its cuBLAS call.
#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/dtype.h"
#include "shim/capture_engine.h"
#include "shim/interception.h"
#include "shim/runtime.h"
#include "shim/tensor_pack.h"

#define TTRACE_LIBRARY kCublasLt
#define TTRACE_UNRESOLVED_STATUS CUBLAS_STATUS_NOT_INITIALIZED

namespace ttrace::shim {
namespace {

using format::DType;
using format::LtLayout;
using format::LtMatmulRecord;
using format::TensorSlot;

LazySymbol g_desc_get(format::Library::kCublasLt, "cublasLtMatmulDescGetAttribute");
LazySymbol g_layout_get(format::Library::kCublasLt, "cublasLtMatrixLayoutGetAttribute");

bool HasBiasInput(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool HasBiasGrad(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DRELU_BGRAD || e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA ||
         e == CUBLASLT_EPILOGUE_BGRADB;
}
bool HasAuxOut(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_RELU_AUX || e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool HasAuxIn(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DRELU || e == CUBLASLT_EPILOGUE_DRELU_BGRAD || e == CUBLASLT_EPILOGUE_DGELU ||
         e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}
// The ReLU aux is a bit mask (one bit per element; ld and batch stride count bits).
bool ReluMask(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_RELU_AUX || e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DRELU ||
         e == CUBLASLT_EPILOGUE_DRELU_BGRAD;
}
bool IsFp8(int32_t t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }
bool Is16Bit(int32_t t) { return t == CUDA_R_16F || t == CUDA_R_16BF; }

// Reads a descriptor's attributes into the record.
class DescReader {
 public:
  explicit DescReader(int version) {
    desc_get_ = reinterpret_cast<decltype(&::cublasLtMatmulDescGetAttribute)>(g_desc_get.Get(version));
    layout_get_ = reinterpret_cast<decltype(&::cublasLtMatrixLayoutGetAttribute)>(g_layout_get.Get(version));
  }
  // False when the attribute could not be read (*out unchanged).
  template <typename T>
  bool Desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T* out) {
    T v;
    size_t written = 0;
    if (desc_get_ == nullptr || desc == nullptr ||
        desc_get_(desc, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS || written != sizeof v) {
      return false;
    }
    *out = v;
    return true;
  }
  template <typename T>
  bool Layout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, T* out) {
    T v;
    size_t written = 0;
    if (layout_get_ == nullptr || layout == nullptr ||
        layout_get_(layout, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS || written != sizeof v) {
      return false;
    }
    *out = v;
    return true;
  }
  bool ReadLayout(cublasLtMatrixLayout_t layout, LtLayout* l, uint32_t* batch_mode) {
    uint32_t type = 0;
    int32_t order = CUBLASLT_ORDER_COL;
    bool ok = Layout(layout, CUBLASLT_MATRIX_LAYOUT_TYPE, &type) && Layout(layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &l->rows) &&
              Layout(layout, CUBLASLT_MATRIX_LAYOUT_COLS, &l->cols) && Layout(layout, CUBLASLT_MATRIX_LAYOUT_LD, &l->ld);
    l->type = static_cast<int32_t>(type);
    Layout(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &order);
    l->order = order;
    l->batch_count = 1;
    Layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &l->batch_count);
    Layout(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &l->batch_stride);
    *batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
    Layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, batch_mode);
    return ok;
  }

 private:
  decltype(&::cublasLtMatmulDescGetAttribute) desc_get_ = nullptr;
  decltype(&::cublasLtMatrixLayoutGetAttribute) layout_get_ = nullptr;
};

struct LtCall {
  LtMatmulRecord rec;
  const void* alpha;
  const void* beta;
  std::string uncapturable;  // why operands are not captured; empty when they are
  uint32_t batch_modes = 0;  // OR of the layouts' batch modes
};

// Fills the record from the descriptors (see the file comment).
void ReadDescriptors(int version, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,
                     cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd, LtCall* c) {
  DescReader rd(version);
  LtMatmulRecord& r = c->rec;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, fill = CUBLAS_FILL_MODE_FULL, transc = CUBLAS_OP_N;
  r.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  r.pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  r.bias_type = r.aux_type = -1;
  bool ok = rd.Desc(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &r.compute_type) &&
            rd.Desc(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &r.scale_type) &&
            rd.Desc(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &r.pointer_mode) &&
            rd.Desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa) && rd.Desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb) &&
            rd.Desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &r.epilogue);
  uint32_t modes[4];
  ok = rd.ReadLayout(ad, &r.a, &modes[0]) && ok;
  ok = rd.ReadLayout(bd, &r.b, &modes[1]) && ok;
  ok = rd.ReadLayout(cd, &r.c, &modes[2]) && ok;
  ok = rd.ReadLayout(dd, &r.d, &modes[3]) && ok;
  for (uint32_t m : modes) c->batch_modes |= m;
  r.transa = static_cast<uint8_t>(transa);
  r.transb = static_cast<uint8_t>(transb);
  // Optional attributes: absent from older libraries, whose defaults then hold.
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_TRANSC, &transc);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_FILL_MODE, &fill);
  const void* p = nullptr;
  auto ptr = [&](cublasLtMatmulDescAttributes_t attr) {
    p = nullptr;
    rd.Desc(desc, attr, &p);
    return reinterpret_cast<uint64_t>(p);
  };
  r.bias_ptr = ptr(CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  r.aux_ptr = ptr(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER);
  r.a_scale_ptr = ptr(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER);
  r.b_scale_ptr = ptr(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER);
  r.c_scale_ptr = ptr(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER);
  r.d_scale_ptr = ptr(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER);
  r.amax_d_ptr = ptr(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER);
  r.aux_scale_ptr = ptr(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER);
  r.aux_amax_ptr = ptr(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &r.bias_batch_stride);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &r.aux_ld);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &r.aux_batch_stride);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &r.bias_type);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &r.aux_type);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &r.a_scale_mode);
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &r.b_scale_mode);
  int8_t fast = 0;
  rd.Desc(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast);
  if (fast != 0) r.flags |= format::kLtFastAccum;
  r.m = static_cast<int64_t>(r.d.rows);
  r.n = static_cast<int64_t>(r.d.cols);
  r.k = static_cast<int64_t>(transa == CUBLAS_OP_N ? r.a.cols : r.a.rows);
  if (!ok) {
    r.flags |= format::kLtDescUnreadable;
    c->uncapturable = "a cuBLASLt descriptor could not be read";
  } else if (transc != CUBLAS_OP_N || fill != CUBLAS_FILL_MODE_FULL) {
    c->uncapturable = "cuBLASLt TRANSC or FILL_MODE other than N / FULL";
  }
}

double ReadHostScalar(const void* p, int32_t scale_type, bool* ok) {
  *ok = true;
  switch (scale_type) {
    case CUDA_R_32F: {
      float v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case CUDA_R_64F: {
      double v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case CUDA_R_16F: {
      uint16_t h;
      memcpy(&h, p, sizeof h);
      return kernels::HalfToFloat(h);
    }
    case CUDA_R_32I: {
      int32_t v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    default:
      *ok = false;
      return 0;
  }
}

bool ValidOp(uint8_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
int64_t MinLd(const LtLayout& l) {
  const uint64_t v = l.order == CUBLASLT_ORDER_ROW ? l.cols : l.rows;
  return static_cast<int64_t>(std::max<uint64_t>(v, 1));
}

// Why the operands cannot be captured as the analyzer reads them; empty when they can.
std::string CaptureProblem(const LtCall& c) {
  const LtMatmulRecord& r = c.rec;
  if (!c.uncapturable.empty()) return c.uncapturable;
  for (const LtLayout* l : {&r.a, &r.b, &r.c, &r.d}) {
    if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW)
      return "cuBLASLt layout order " + std::to_string(l->order) + " (only COL and ROW are captured)";
  }
  if (c.batch_modes != CUBLASLT_BATCH_MODE_STRIDED) return "cuBLASLt pointer-array batches are not captured";
  if (!ValidOp(r.transa) || !ValidOp(r.transb)) return "invalid";
  const uint64_t a_m = r.transa == CUBLAS_OP_N ? r.a.rows : r.a.cols;
  const uint64_t b_k = r.transb == CUBLAS_OP_N ? r.b.rows : r.b.cols;
  const uint64_t b_n = r.transb == CUBLAS_OP_N ? r.b.cols : r.b.rows;
  if (a_m != r.d.rows || b_k != static_cast<uint64_t>(r.k) || b_n != r.d.cols || r.c.rows != r.d.rows ||
      r.c.cols != r.d.cols || r.d.rows > INT64_MAX || r.d.cols > INT64_MAX)
    return "invalid";
  for (const LtLayout* l : {&r.a, &r.b, &r.c, &r.d}) {
    if (l->ld < MinLd(*l) || l->batch_count < 1 || l->batch_count != r.d.batch_count || l->batch_stride < 0)
      return "invalid";
  }
  return "";
}

// A matrix as stored: a ROW-order matrix is the column-major storage of its transpose.
TensorSpec MatrixSpec(TensorSlot slot, const void* ptr, const LtLayout& l) {
  TensorSpec t;
  t.slot = slot;
  t.dtype = DTypeFromCuda(l.type);
  t.ptr = ptr;
  const bool row = l.order == CUBLASLT_ORDER_ROW;
  t.rows = static_cast<int64_t>(row ? l.cols : l.rows);
  t.cols = static_cast<int64_t>(row ? l.rows : l.cols);
  t.ld = l.ld;
  t.batch = l.batch_stride == 0 ? 1 : l.batch_count;  // stride 0: one matrix shared by every batch
  t.batch_stride = l.batch_stride;
  return t;
}

TensorSpec VectorSpec(TensorSlot slot, uint64_t ptr, DType dtype, int64_t length, int64_t batch, int64_t stride) {
  TensorSpec t;
  t.slot = slot;
  t.dtype = dtype;
  t.ptr = reinterpret_cast<const void*>(ptr);
  t.rows = t.ld = length;
  t.cols = 1;
  t.batch = stride == 0 ? 1 : batch;
  t.batch_stride = stride;
  return t;
}

// The bias (or bias gradient) type: BIAS_DATA_TYPE, else cuBLASLt's default (D's type; for FP8 inputs C's type
// when it is 16-bit, BF16 otherwise).
int32_t BiasType(const LtMatmulRecord& r) {
  if (r.bias_type != -1) return r.bias_type;
  if (IsFp8(r.a.type) && IsFp8(r.b.type)) return Is16Bit(r.c.type) ? r.c.type : CUDA_R_16BF;
  return r.d.type;
}

TensorSpec AuxSpec(TensorSlot slot, const LtMatmulRecord& r) {
  TensorSpec t;
  t.slot = slot;
  t.ptr = reinterpret_cast<const void*>(r.aux_ptr);
  t.batch = r.aux_batch_stride == 0 ? 1 : r.d.batch_count;
  if (ReluMask(r.epilogue)) {  // bytes of the bit mask, 8 rows per byte
    t.dtype = DType::kU8;
    t.rows = (r.m + 7) / 8;
    t.ld = r.aux_ld / 8;
    t.batch_stride = r.aux_batch_stride / 8;
  } else {
    t.dtype = DTypeFromCuda(r.aux_type == -1 ? r.d.type : r.aux_type);
    t.rows = r.m;
    t.ld = r.aux_ld;
    t.batch_stride = r.aux_batch_stride;
  }
  t.cols = r.n;
  return t;
}

void Capture(TensorGroup* group, const TensorSpec& t) {
  if (t.ptr == nullptr) return;
  if (t.dtype == DType::kInvalid) {
    group->engine()->Drop(group->seq(), format::DropReason::kUnsupported,
                 "cuBLASLt operand slot " + std::to_string(static_cast<int>(t.slot)) + " has no ttrace dtype");
    return;
  }
  group->Add(t);
}

// An FP8 scale: one float (SCALAR_32F), or one per row of D (A, OUTER_VEC_32F) or column (B). Block-scaling modes
// are not captured: the analyzer has no model for them.
void CaptureScale(TensorGroup* group, const LtMatmulRecord& r, TensorSlot slot, uint64_t ptr, int32_t mode,
                  int64_t vector_length) {
  if (ptr == 0) return;
  if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) {
    Capture(group, VectorSpec(slot, ptr, DType::kF32, 1, 1, 0));
  } else if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F) {
    Capture(group, VectorSpec(slot, ptr, DType::kF32, vector_length, 1, 0));
  } else {
    group->engine()->Drop(r.seq, "cuBLASLt scale mode " + std::to_string(mode) + " is not captured");
  }
}

void CaptureScalar(TensorGroup* group, const LtCall& c, TensorSlot slot) {
  const DType dtype = DTypeFromCuda(c.rec.scale_type);
  const void* p = slot == TensorSlot::kAlpha ? c.alpha : c.beta;
  if (p != nullptr && dtype != DType::kInvalid)
    group->Add(VectorSpec(slot, reinterpret_cast<uint64_t>(p), dtype, 1, 1, 0));
}

template <typename Real>
cublasStatus_t TraceLtMatmul(LtCall* c, const void* a, const void* b, const void* cc, void* d, cudaStream_t stream,
                             const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  LtMatmulRecord& r = c->rec;
  r.seq = slot.seq;
  r.t_ns = MonotonicNs();
  r.stream = reinterpret_cast<uint64_t>(stream);
  r.a_ptr = reinterpret_cast<uint64_t>(a);
  r.b_ptr = reinterpret_cast<uint64_t>(b);
  r.c_ptr = reinterpret_cast<uint64_t>(cc);
  r.d_ptr = reinterpret_cast<uint64_t>(d);
  r.flags |= format::kLtScalarsUnknown;
  if (r.pointer_mode == CUBLASLT_POINTER_MODE_HOST && c->alpha != nullptr && c->beta != nullptr &&
      !(r.flags & format::kLtDescUnreadable)) {
    bool ok_a, ok_b;
    r.alpha = ReadHostScalar(c->alpha, r.scale_type, &ok_a);
    r.beta = ReadHostScalar(c->beta, r.scale_type, &ok_b);
    if (ok_a && ok_b) r.flags &= ~format::kLtScalarsUnknown;
  }
  const std::string problem = CaptureProblem(*c);
  const bool capture = engine->capturing_tensors() && problem.empty();
  if (engine->capturing_tensors() && !problem.empty() && problem != "invalid") engine->Drop(r.seq, problem);
  const uint32_t e = r.epilogue;
  const DType bias_dtype = DTypeFromCuda(BiasType(r));
  const int64_t bias_length = e == CUBLASLT_EPILOGUE_BGRADB ? r.n : r.m;
  if (capture) {  // the inputs: one group (one event)
    TensorGroup g(engine, r.seq, stream);
    if (r.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE) {
      CaptureScalar(&g, *c, TensorSlot::kAlpha);
      CaptureScalar(&g, *c, TensorSlot::kBeta);
    }
    Capture(&g, MatrixSpec(TensorSlot::kA, a, r.a));
    Capture(&g, MatrixSpec(TensorSlot::kB, b, r.b));
    if ((r.flags & format::kLtScalarsUnknown) || r.beta != 0)
      Capture(&g, MatrixSpec(TensorSlot::kCIn, cc, r.c));
    if (HasBiasInput(e))
      Capture(&g,
              VectorSpec(TensorSlot::kBias, r.bias_ptr, bias_dtype, bias_length, r.d.batch_count, r.bias_batch_stride));
    if (HasAuxIn(e)) Capture(&g, AuxSpec(TensorSlot::kAuxIn, r));
    CaptureScale(&g, r, TensorSlot::kScaleA, r.a_scale_ptr, r.a_scale_mode, r.m);
    CaptureScale(&g, r, TensorSlot::kScaleB, r.b_scale_ptr, r.b_scale_mode, r.n);
    CaptureScale(&g, r, TensorSlot::kScaleC, r.c_scale_ptr, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, 1);
    CaptureScale(&g, r, TensorSlot::kScaleD, r.d_scale_ptr, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, 1);
    if (HasAuxOut(e))
      CaptureScale(&g, r, TensorSlot::kAuxScale, r.aux_scale_ptr, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, 1);
  }
  const cublasStatus_t status = real();
  if (capture && status == CUBLAS_STATUS_SUCCESS) {
    TensorGroup g(engine, r.seq, stream);
    Capture(&g, MatrixSpec(TensorSlot::kCOut, d, r.d));
    if (HasAuxOut(e)) Capture(&g, AuxSpec(TensorSlot::kAuxOut, r));
    if (HasBiasGrad(e))
      Capture(&g, VectorSpec(TensorSlot::kBiasGrad, r.bias_ptr, bias_dtype, bias_length, r.d.batch_count,
                             r.bias_batch_stride));
    if (r.amax_d_ptr != 0) Capture(&g, VectorSpec(TensorSlot::kAmaxD, r.amax_d_ptr, DType::kF32, 1, 1, 0));
    if (r.aux_amax_ptr != 0 && HasAuxOut(e))
      Capture(&g, VectorSpec(TensorSlot::kAuxAmax, r.aux_amax_ptr, DType::kF32, 1, 1, 0));
  }
  r.status = status;
  engine->Publish(slot, format::RecordType::kLtMatmul, r);
  return status;
}

}  // namespace
}  // namespace ttrace::shim

TTRACE_INTERCEPTOR(cublasStatus_t, cublasLtMatmul,
                   (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A,
                    cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                    const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                    const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
                    cudaStream_t stream),
                   (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                    workspaceSizeInBytes, stream)) {
  ttrace::shim::LtCall c;
  memset(&c.rec, 0, sizeof c.rec);
  c.rec.api = static_cast<uint16_t>(ttrace::format::ApiId::kCublasLtMatmul);
  c.rec.handle = reinterpret_cast<uint64_t>(lightHandle);
  c.alpha = alpha;
  c.beta = beta;
  ttrace::shim::ReadDescriptors(vendor_version, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &c);
  return ttrace::shim::TraceLtMatmul(&c, A, B, C, D, stream, [&] {
    return REAL(cublasLtMatmul)(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                                workspace, workspaceSizeInBytes, stream);
  });
}
