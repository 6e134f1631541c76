// Decoding captured tensors (format.h TensorRecord payloads) into FP64 values, and the names of the vendors'
// element-type enums (cudaDataType_t, ncclDataType_t) from the trace's one dtype table (ttrace/dtypes.inc).
//
// Pure functions, thread-compatible. Every conversion is exact: FP64 holds every value of every element type the
// format knows (64-bit integers above 2^53 excepted: those lose low bits, which only integer checks would see,
// and they compare raw bits instead).
#ifndef TTRACE_ANALYZER_TENSOR_DATA_H_
#define TTRACE_ANALYZER_TENSOR_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ttrace/format.h"

namespace ttrace::analyzer {

// "f32", "bf16", ...; "dtype<N>" for a value outside the list (ttrace/dtypes.inc).
std::string DTypeName(uint8_t dtype);

// The trace DType of a real cudaDataType_t / ncclDataType_t / cudnnDataType_t value; kInvalid for complex,
// sub-byte or unknown. One table for the shim and the analyzer: ttrace/dtypes.inc.
using format::DTypeFromCuda;
using format::DTypeFromCudnn;
using format::DTypeFromNccl;
std::string CudaTypeName(int32_t cuda_type);  // "CUDA_R_16BF", or the number
std::string NcclTypeName(int32_t nccl_type);  // "ncclBfloat16", or the number

bool IsFloatDType(format::DType d);

// Value of element `i` of a dense payload of type `dtype`. The caller has checked that the payload holds it.
double DecodeElement(format::DType dtype, const char* data, uint64_t i);

// All elements of a payload (payload.size() / DTypeSize elements) as FP64.
std::vector<double> DecodeAll(format::DType dtype, absl::string_view payload);

// Elements first, first + stride, ..., `count` of them, of a dense payload as FP64 into out[0], out[out_stride], ...
// (the dtype switch outside the loop: a panel of a large operand converts at memory speed, with no FP64 copy of the
// whole). The caller has checked that the payload holds them.
void DecodeStrided(format::DType dtype, const char* data, uint64_t first, uint64_t stride, uint64_t count, double* out,
                   uint64_t out_stride = 1);
// out[t] = element first + offsets[t], for t < count (a gather: rows of a column-major matrix, one column at a time).
void DecodeGather(format::DType dtype, const char* data, uint64_t first, const int64_t* offsets, uint64_t count,
                  double* out);

// FP8 (OCP / NVIDIA __nv_fp8_e4m3, __nv_fp8_e5m2) to FP32, exact. E4M3 has no infinity (S.1111.111 is NaN).
float E4m3ToFloat(uint8_t v);
float E5m2ToFloat(uint8_t v);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_TENSOR_DATA_H_
