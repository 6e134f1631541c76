// Descriptor creation and attribute access; descriptors.h states the semantics. One field table (attributes.inc)
// drives getters and setters of all three descriptor kinds, so an attribute's size is written down once.
#include "tools/simgpu/cublaslt/descriptors.h"

#include <cstring>
#include <new>

namespace simgpu::cublaslt {
namespace {

struct Field {
  void* ptr = nullptr;
  size_t size = 0;
};

bool FindField(MatmulDescState* s, int attr, Field* out) {
  switch (attr) {
#define SIMGPU_LT_MATMUL_DESC_ATTR(a, f) \
  case a:                                \
    *out = {&s->f, sizeof(s->f)};        \
    return true;
#include "tools/simgpu/cublaslt/attributes.inc"
    default:
      return false;
  }
}

bool FindField(LayoutState* s, int attr, Field* out) {
  switch (attr) {
#define SIMGPU_LT_LAYOUT_ATTR(a, f) \
  case a:                           \
    *out = {&s->f, sizeof(s->f)};   \
    return true;
#include "tools/simgpu/cublaslt/attributes.inc"
    default:
      return false;
  }
}

bool FindField(PreferenceState* s, int attr, Field* out) {
  switch (attr) {
#define SIMGPU_LT_PREFERENCE_ATTR(a, f) \
  case a:                               \
    *out = {&s->f, sizeof(s->f)};       \
    return true;
#include "tools/simgpu/cublaslt/attributes.inc"
    default:
      return false;
  }
}

bool FindField(AlgoConfigState* s, int attr, Field* out) {
  switch (attr) {
#define SIMGPU_LT_ALGO_CONFIG_ATTR(a, f) \
  case a:                                \
    *out = {&s->f, sizeof(s->f)};        \
    return true;
#include "tools/simgpu/cublaslt/attributes.inc"
    default:
      return false;
  }
}

template <typename Desc>
cublasStatus_t SetAttribute(Desc desc, int attr, const void* buf, size_t size) {
  Field f;
  if (desc == nullptr || !FindField(State(desc), attr, &f)) return CUBLAS_STATUS_INVALID_VALUE;
  if (buf == nullptr || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(f.ptr, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

template <typename Desc>
cublasStatus_t GetAttribute(Desc desc, int attr, void* buf, size_t size, size_t* written) {
  Field f;
  if (desc == nullptr || !FindField(State(desc), attr, &f)) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (written == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *written = f.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, f.ptr, size);
  if (written != nullptr) *written = f.size;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace simgpu::cublaslt

using simgpu::cublaslt::GetAttribute;
using simgpu::cublaslt::LayoutState;
using simgpu::cublaslt::MatmulDescState;
using simgpu::cublaslt::PreferenceState;
using simgpu::cublaslt::SetAttribute;

extern "C" {

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType, cudaDataType_t scaleType) {
  if (matmulDesc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(*matmulDesc)) return CUBLAS_STATUS_ALLOC_FAILED;
  memset(matmulDesc, 0, sizeof(*matmulDesc));
  auto* s = new (matmulDesc->data) MatmulDescState;
  s->compute_type = computeType;
  s->scale_type = scaleType;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  if (matmulDesc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new (std::nothrow) cublasLtMatmulDescOpaque_t;
  if (d == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatmulDescInit_internal(d, sizeof(*d), computeType, scaleType);
  *matmulDesc = d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  return SetAttribute(matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  return GetAttribute(matmulDesc, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  if (matLayout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(*matLayout)) return CUBLAS_STATUS_ALLOC_FAILED;
  memset(matLayout, 0, sizeof(*matLayout));
  auto* s = new (matLayout->data) LayoutState;
  s->type = static_cast<uint32_t>(type);
  s->rows = rows;
  s->cols = cols;
  s->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (matLayout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new (std::nothrow) cublasLtMatrixLayoutOpaque_t;
  if (l == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatrixLayoutInit_internal(l, sizeof(*l), type, rows, cols, ld);
  *matLayout = l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  return SetAttribute(matLayout, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  return GetAttribute(matLayout, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(*pref)) return CUBLAS_STATUS_ALLOC_FAILED;
  memset(pref, 0, sizeof(*pref));
  new (pref->data) PreferenceState;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* p = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t;
  if (p == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatmulPreferenceInit_internal(p, sizeof(*p));
  *pref = p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  return SetAttribute(pref, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten) {
  return GetAttribute(pref, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                   cublasLtMatmulAlgoConfigAttributes_t attr, const void* buf,
                                                   size_t sizeInBytes) {
  if (attr == CUBLASLT_ALGO_CONFIG_ID) return CUBLAS_STATUS_INVALID_VALUE;  // read-only, as on NVIDIA's library
  return SetAttribute(algo, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                   cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                   size_t sizeInBytes, size_t* sizeWritten) {
  return GetAttribute(const_cast<cublasLtMatmulAlgo_t*>(algo), attr, buf, sizeInBytes, sizeWritten);
}

}  // extern "C"
