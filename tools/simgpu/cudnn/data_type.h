// Internal to libcudnn.so.9 (simgpu): element sizes and conversions of cuDNN's data types. Conversions to and from
// FP16, BF16 and FP8 (E4M3, E5M2) are bit-exact with NVIDIA's conversion intrinsics (round to nearest even,
// common/nv_dtype.h); FP8 stores saturate to the largest finite value (satfinite, as cuBLASLt's FP8 outputs do and
// cudnn-frontend's FP8 attention relies on with its scale and amax tensors; unverified on a GPU); integer stores
// round to nearest and saturate; an FP64 value stored as FP16, BF16 or FP8 is rounded to FP32 first. The vectorized
// and sub-byte types have no conversion here (ElementBytes 0).
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_DATA_TYPE_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_DATA_TYPE_H_

#include <cudnn.h>
#include <library_types.h>

#include <cstddef>

namespace simgpu::cudnn {

// Bytes of one element: FLOAT 4, DOUBLE 8, HALF 2, BFLOAT16 2, INT8 1, UINT8 1, INT32 4, INT64 8, BOOLEAN 1 (one
// byte per element, 0 or 1), FP8_E4M3 and FP8_E5M2 1; 0 for every other type.
size_t ElementBytes(cudnnDataType_t type);

// The cudaDataType of an element (for fault injection); false for a type without one here.
bool ToCudaDataType(cudnnDataType_t type, cudaDataType* out);

// Element i of an array of `type` (ElementBytes(type) != 0), widened: exactly for FP16, BF16, FP32 and integers
// that fit; FP64 rounds to nearest when read as float.
float LoadFloat(const void* base, size_t i, cudnnDataType_t type);
double LoadDouble(const void* base, size_t i, cudnnDataType_t type);
// Stores v as element i of `type`, rounded to nearest even (floating types) or to nearest and saturated
// (integers; NaN stores 0); BOOLEAN stores v != 0.
void StoreFloat(void* base, size_t i, cudnnDataType_t type, float v);
void StoreDouble(void* base, size_t i, cudnnDataType_t type, double v);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_DATA_TYPE_H_
