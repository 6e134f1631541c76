// Internal to libcublasLt.so.13 (simgpu): the state behind cuBLASLt's semi-opaque descriptors.
//
// cublasLt.h gives applications the descriptor storage (cublasLtMatmulDescOpaque_t, 256 bytes;
// cublasLtMatrixLayoutOpaque_t and cublasLtMatmulPreferenceOpaque_t, 64 bytes each) so that they can keep
// descriptors on the stack and initialize them with the *Init_internal calls; the *Create calls allocate the same
// storage on the heap. simgpu keeps each descriptor's whole state inside that storage (static_asserts below), so
// both forms work and a descriptor can be copied with memcpy, as on NVIDIA's library.
//
// Attribute semantics, as NVIDIA's libcublasLt.so.13 answers (recorded by descriptor_probe.cc on the real library):
// setters store any value of the right size verbatim (values are validated when a descriptor is used, by
// cublasLtMatmul and cublasLtMatmulAlgoGetHeuristic); a setter returns CUBLAS_STATUS_INVALID_VALUE for an unknown
// attribute, a NULL buffer or a size other than the attribute's; a getter with sizeInBytes == 0 writes the
// attribute's size to *sizeWritten (INVALID_VALUE when sizeWritten is NULL); otherwise it needs a non-NULL buffer
// and exactly the attribute's size, writes the value and, when sizeWritten is non-NULL, the size. A NULL descriptor
// gives INVALID_VALUE.
//
// cublasLtMatmulAlgo_t (a plain 64-byte struct applications copy around) follows the same getter and setter rules
// for its configuration attributes.
//
// Thread safety: a descriptor is used by one thread at a time (as cuBLASLt requires); nothing here is shared.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLASLT_DESCRIPTORS_H_
#define TTRACE_TOOLS_SIMGPU_CUBLASLT_DESCRIPTORS_H_

#include <cublasLt.h>

#include <cstdint>

namespace simgpu::cublaslt {

// One cublasLtMatmulDesc_t. Field comments name the attribute; defaults are NVIDIA's.
struct MatmulDescState {
  int32_t compute_type = CUBLAS_COMPUTE_32F;     // COMPUTE_TYPE (set by Create/Init)
  int32_t scale_type = CUDA_R_32F;               // SCALE_TYPE (set by Create/Init)
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t trans_a = CUBLAS_OP_N;
  int32_t trans_b = CUBLAS_OP_N;
  int32_t trans_c = CUBLAS_OP_N;
  int32_t fill_mode = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;                    // BIAS_POINTER (bias, or bias gradient output)
  int64_t bias_batch_stride = 0;
  void* aux = nullptr;                           // EPILOGUE_AUX_POINTER
  int64_t aux_ld = 0;
  int64_t aux_batch_stride = 0;
  int64_t alpha_vector_batch_stride = 0;
  int32_t sm_count_target = 0;
  int32_t attribute16 = 0;                       // id 16: absent from cublasLt.h, answered by NVIDIA's library
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  const void* c_scale = nullptr;
  const void* d_scale = nullptr;
  void* amax_d = nullptr;
  int32_t aux_data_type = -1;
  const void* aux_scale = nullptr;
  void* aux_amax = nullptr;
  int8_t fast_accum = 0;
  int32_t bias_data_type = -1;
  int32_t a_scale_mode = 0;
  int32_t b_scale_mode = 0;
  int32_t c_scale_mode = 0;
  int32_t d_scale_mode = 0;
  int32_t aux_scale_mode = 0;
  const void* d_out_scale = nullptr;
  int32_t d_out_scale_mode = 0;
  cublasLtEmulationDesc_t emulation = nullptr;
};

// One cublasLtMatrixLayout_t.
struct LayoutState {
  uint32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;
  int32_t batch_count = 1;
  int64_t batch_stride = 0;   // STRIDED_BATCH_OFFSET, in elements
  int64_t plane_offset = 0;
  uint32_t batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
};

// One cublasLtMatmulPreference_t.
struct PreferenceState {
  uint32_t search_mode = CUBLASLT_SEARCH_BEST_FIT;
  uint64_t max_workspace_bytes = 0;
  uint32_t reduction_scheme_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  uint32_t min_alignment_a = 256;
  uint32_t min_alignment_b = 256;
  uint32_t min_alignment_c = 256;
  uint32_t min_alignment_d = 256;
  float max_waves_count = 0.0f;
  uint64_t impl_mask = ~uint64_t{0};
};

// The configuration inside a cublasLtMatmulAlgo_t (after its first 8 bytes, which the heuristic uses as a marker).
// All zero in a zeroed struct, as NVIDIA's getters answer for one.
struct AlgoConfigState {
  int32_t id = 0;
  uint32_t tile_id = CUBLASLT_MATMUL_TILE_UNDEFINED;
  int32_t splitk_num = 0;
  uint32_t reduction_scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
  uint32_t cta_swizzling = 0;
  uint32_t custom_option = 0;
  uint32_t stages_id = CUBLASLT_MATMUL_STAGES_UNDEFINED;
  uint16_t inner_shape_id = CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED;
  uint16_t cluster_shape_id = CUBLASLT_CLUSTER_SHAPE_AUTO;
  uint16_t attribute10 = 0;  // id 10: absent from cublasLt.h, answered by NVIDIA's library
};

static_assert(sizeof(MatmulDescState) <= sizeof(cublasLtMatmulDescOpaque_t), "state must fit NVIDIA's storage");
static_assert(sizeof(AlgoConfigState) + 8 <= sizeof(cublasLtMatmulAlgo_t), "state must fit NVIDIA's storage");
static_assert(sizeof(LayoutState) <= sizeof(cublasLtMatrixLayoutOpaque_t), "state must fit NVIDIA's storage");
static_assert(sizeof(PreferenceState) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "state must fit");

// The state inside a descriptor initialized by Create or Init_internal.
inline MatmulDescState* State(cublasLtMatmulDesc_t d) { return reinterpret_cast<MatmulDescState*>(d->data); }
inline LayoutState* State(cublasLtMatrixLayout_t l) { return reinterpret_cast<LayoutState*>(l->data); }
inline PreferenceState* State(cublasLtMatmulPreference_t p) { return reinterpret_cast<PreferenceState*>(p->data); }
inline AlgoConfigState* State(cublasLtMatmulAlgo_t* a) { return reinterpret_cast<AlgoConfigState*>(a->data + 1); }

}  // namespace simgpu::cublaslt

#endif  // TTRACE_TOOLS_SIMGPU_CUBLASLT_DESCRIPTORS_H_
