// Descriptor attributes (descriptors.h): sizes as cublasLt.h documents them, defaults, round trips, the
// sizeWritten protocol and the error codes, on heap (Create) and stack (Init) descriptors. The same behaviour is
// compared with NVIDIA's library line by line by simgpu.CublasLt.DescriptorsMatchNvidia (descriptor_probe.cc).
#include <cublasLt.h>

#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"

namespace {

// Attribute id and the size cublasLt.h gives its type.
struct Attr {
  int id;
  size_t size;
};

constexpr Attr kMatmulDescAttrs[] = {
    {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4}, {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4},
    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4}, {CUBLASLT_MATMUL_DESC_TRANSA, 4},
    {CUBLASLT_MATMUL_DESC_TRANSB, 4}, {CUBLASLT_MATMUL_DESC_TRANSC, 4},
    {CUBLASLT_MATMUL_DESC_FILL_MODE, 4}, {CUBLASLT_MATMUL_DESC_EPILOGUE, 4},
    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8}, {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 8}, {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 8}, {CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 8},
    {CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 4}, {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8}, {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8}, {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, 4}, {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, 8}, {CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1},
    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4}, {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4}, {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4}, {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, 8}, {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8},
};

int32_t GetInt32(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr) {
  int32_t v = -12345;
  size_t written = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, &v, sizeof v, &written), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof v);
  return v;
}

TEST(LtDescriptors, MatmulDescDefaultsFromCreate) {
  cublasLtMatmulDesc_t d;
  ASSERT_EQ(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE), CUDA_R_32F);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_POINTER_MODE), CUBLASLT_POINTER_MODE_HOST);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_N);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_FILL_MODE), CUBLAS_FILL_MODE_FULL);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_EPILOGUE), CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE), -1);
  EXPECT_EQ(GetInt32(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE), -1);
  void* ptr = &ptr;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr, sizeof ptr, &written), 0);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(cublasLtMatmulDescDestroy(d), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(nullptr), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescCreate(nullptr, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_INVALID_VALUE);
}

TEST(LtDescriptors, EveryMatmulDescAttributeSizeRoundTripAndErrors) {
  cublasLtMatmulDesc_t d;
  ASSERT_EQ(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  for (const Attr& a : kMatmulDescAttrs) {
    SCOPED_TRACE(a.id);
    const auto attr = static_cast<cublasLtMatmulDescAttributes_t>(a.id);
    size_t written = 0;
    // Size query: sizeInBytes == 0 reports the size (and needs sizeWritten).
    ASSERT_EQ(cublasLtMatmulDescGetAttribute(d, attr, nullptr, 0, &written), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(written, a.size);
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, nullptr, 0, nullptr), CUBLAS_STATUS_INVALID_VALUE);
    // A distinct pattern of exactly the attribute's size comes back unchanged.
    uint8_t in[8], out[8];
    for (size_t i = 0; i < 8; ++i) in[i] = static_cast<uint8_t>(0x11 * (i + 1) + a.id);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, attr, in, a.size), CUBLAS_STATUS_SUCCESS);
    memset(out, 0, sizeof out);
    written = 0;
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, out, a.size, &written), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(written, a.size);
    EXPECT_EQ(memcmp(in, out, a.size), 0);
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, out, a.size, nullptr), CUBLAS_STATUS_SUCCESS);
    // Wrong sizes and NULL buffers, on both sides; sizeWritten untouched on failure.
    written = 777;
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, out, a.size + 1, &written), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, nullptr, a.size, &written), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(written, 777u);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, attr, in, a.size + 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, attr, in, a.size - 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, attr, nullptr, a.size), CUBLAS_STATUS_INVALID_VALUE);
  }
  // Attributes cublasLt.h does not define (9 and 27..30 are gaps) are rejected.
  for (int id : {9, 27, 30, 39, 1000}) {
    uint64_t v = 0;
    size_t written;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, static_cast<cublasLtMatmulDescAttributes_t>(id), &v, 4),
              CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, static_cast<cublasLtMatmulDescAttributes_t>(id), nullptr, 0, &written),
              CUBLAS_STATUS_INVALID_VALUE);
  }
  int32_t v = 0;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(nullptr, CUBLASLT_MATMUL_DESC_TRANSA, &v, 4), CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulDescDestroy(d);
}

TEST(LtDescriptors, StackDescriptorsAndCopies) {
  cublasLtMatmulDescOpaque_t storage;
  EXPECT_EQ(cublasLtMatmulDescInit_internal(&storage, 8, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_ALLOC_FAILED);
  ASSERT_EQ(cublasLtMatmulDescInit(&storage, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const int32_t t = CUBLAS_OP_T;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(&storage, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof t), 0);
  cublasLtMatmulDescOpaque_t copy;
  memcpy(&copy, &storage, sizeof copy);
  EXPECT_EQ(GetInt32(&copy, CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_T);

  cublasLtMatrixLayoutOpaque_t layout;
  EXPECT_EQ(cublasLtMatrixLayoutInit_internal(&layout, 8, CUDA_R_32F, 1, 1, 1), CUBLAS_STATUS_ALLOC_FAILED);
  ASSERT_EQ(cublasLtMatrixLayoutInit(&layout, CUDA_R_16BF, 5, 7, 9), CUBLAS_STATUS_SUCCESS);
  uint64_t cols = 0;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(&layout, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, &written), 0);
  EXPECT_EQ(cols, 7u);
  EXPECT_EQ(cublasLtMatrixLayoutInit_internal(nullptr, sizeof layout, CUDA_R_32F, 1, 1, 1),
            CUBLAS_STATUS_INVALID_VALUE);

  cublasLtMatmulPreferenceOpaque_t pref;
  EXPECT_EQ(cublasLtMatmulPreferenceInit_internal(&pref, 8), CUBLAS_STATUS_ALLOC_FAILED);
  ASSERT_EQ(cublasLtMatmulPreferenceInit(&pref), CUBLAS_STATUS_SUCCESS);
  uint32_t alignment = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignment,
                                                 sizeof alignment, &written),
            0);
  EXPECT_EQ(alignment, 256u);
}

TEST(LtDescriptors, LayoutAttributes) {
  cublasLtMatrixLayout_t l;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 3, 4, 5), CUBLAS_STATUS_SUCCESS);
  const Attr attrs[] = {{CUBLASLT_MATRIX_LAYOUT_TYPE, 4},  {CUBLASLT_MATRIX_LAYOUT_ORDER, 4},
                        {CUBLASLT_MATRIX_LAYOUT_ROWS, 8},  {CUBLASLT_MATRIX_LAYOUT_COLS, 8},
                        {CUBLASLT_MATRIX_LAYOUT_LD, 8},    {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4},
                        {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8}, {CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8},
                        {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4}};
  const int64_t defaults[] = {CUDA_R_16F, CUBLASLT_ORDER_COL, 3, 4, 5, 1, 0, 0, CUBLASLT_BATCH_MODE_STRIDED};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; ++i) {
    const auto attr = static_cast<cublasLtMatrixLayoutAttribute_t>(attrs[i].id);
    SCOPED_TRACE(attrs[i].id);
    size_t written = 0;
    ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(l, attr, nullptr, 0, &written), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(written, attrs[i].size);
    int64_t value = 0;  // little-endian: a 4-byte value lands in the low half
    ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(l, attr, &value, written, &written), CUBLAS_STATUS_SUCCESS);
    if (attrs[i].size == 4) value = static_cast<int32_t>(value);
    EXPECT_EQ(value, defaults[i]);
    const int64_t next = 40 + static_cast<int64_t>(i);
    ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(l, attr, &next, attrs[i].size), CUBLAS_STATUS_SUCCESS);
    int64_t back = 0;
    ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(l, attr, &back, attrs[i].size, nullptr), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(back, next);
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l, attr, &next, attrs[i].size + 4), CUBLAS_STATUS_INVALID_VALUE);
  }
  int64_t v = 0;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l, static_cast<cublasLtMatrixLayoutAttribute_t>(9), &v, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
}

TEST(LtDescriptors, PreferenceAttributes) {
  cublasLtMatmulPreference_t p;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&p), CUBLAS_STATUS_SUCCESS);
  uint64_t workspace = 123;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, nullptr, 0, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, 8u);
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, 8, nullptr),
            0);
  EXPECT_EQ(workspace, 0u);
  workspace = 1 << 22;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, 8), 0);
  workspace = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, 8, nullptr),
            0);
  EXPECT_EQ(workspace, 1u << 22);
  uint32_t small = 0;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &small, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  uint32_t mask = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, 4, nullptr), 0);
  EXPECT_EQ(mask, static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_MASK));
  uint64_t impl = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_IMPL_MASK, &impl, 8, nullptr), 0);
  EXPECT_EQ(impl, ~uint64_t{0});
  EXPECT_EQ(cublasLtMatmulPreferenceGetAttribute(p, static_cast<cublasLtMatmulPreferenceAttributes_t>(2), nullptr, 0,
                                                 &written),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(p), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
