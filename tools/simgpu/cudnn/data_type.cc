// Element conversions (data_type.h).
#include "tools/simgpu/cudnn/data_type.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::cudnn {
namespace {

template <typename T>
T Read(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void Write(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
T SaturateRound(double v) {
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

}  // namespace

size_t ElementBytes(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
      return 4;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
      return 8;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
      return 1;
    default:
      return 0;
  }
}

bool ToCudaDataType(cudnnDataType_t type, cudaDataType* out) {
  switch (type) {
    case CUDNN_DATA_FLOAT: *out = CUDA_R_32F; return true;
    case CUDNN_DATA_DOUBLE: *out = CUDA_R_64F; return true;
    case CUDNN_DATA_HALF: *out = CUDA_R_16F; return true;
    case CUDNN_DATA_BFLOAT16: *out = CUDA_R_16BF; return true;
    case CUDNN_DATA_INT8: *out = CUDA_R_8I; return true;
    case CUDNN_DATA_UINT8: *out = CUDA_R_8U; return true;
    case CUDNN_DATA_INT32: *out = CUDA_R_32I; return true;
    case CUDNN_DATA_INT64: *out = CUDA_R_64I; return true;
    case CUDNN_DATA_FP8_E4M3: *out = CUDA_R_8F_E4M3; return true;
    case CUDNN_DATA_FP8_E5M2: *out = CUDA_R_8F_E5M2; return true;
    default: return false;
  }
}

double LoadDouble(const void* base, size_t i, cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_DOUBLE: return Read<double>(base, i);
    case CUDNN_DATA_INT64: return static_cast<double>(Read<int64_t>(base, i));
    default: return LoadFloat(base, i, type);
  }
}

float LoadFloat(const void* base, size_t i, cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT: return Read<float>(base, i);
    case CUDNN_DATA_DOUBLE: return static_cast<float>(Read<double>(base, i));
    case CUDNN_DATA_HALF: return simgpu::nv::HalfToFloat(Read<uint16_t>(base, i));
    case CUDNN_DATA_BFLOAT16: return simgpu::nv::Bf16ToFloat(Read<uint16_t>(base, i));
    case CUDNN_DATA_INT8: return Read<int8_t>(base, i);
    case CUDNN_DATA_UINT8: return Read<uint8_t>(base, i);
    case CUDNN_DATA_BOOLEAN: return Read<uint8_t>(base, i) != 0 ? 1.0f : 0.0f;
    case CUDNN_DATA_INT32: return static_cast<float>(Read<int32_t>(base, i));
    case CUDNN_DATA_INT64: return static_cast<float>(Read<int64_t>(base, i));
    case CUDNN_DATA_FP8_E4M3: return simgpu::nv::E4M3ToFloat(Read<uint8_t>(base, i));
    case CUDNN_DATA_FP8_E5M2: return simgpu::nv::E5M2ToFloat(Read<uint8_t>(base, i));
    default: return 0.0f;
  }
}

void StoreFloat(void* base, size_t i, cudnnDataType_t type, float v) {
  switch (type) {
    case CUDNN_DATA_FLOAT: Write<float>(base, i, v); return;
    case CUDNN_DATA_HALF: Write<uint16_t>(base, i, simgpu::nv::FloatToHalf(v)); return;
    case CUDNN_DATA_BFLOAT16: Write<uint16_t>(base, i, simgpu::nv::FloatToBf16(v)); return;
    case CUDNN_DATA_FP8_E4M3: Write<uint8_t>(base, i, simgpu::nv::FloatToE4M3(v)); return;
    case CUDNN_DATA_FP8_E5M2: Write<uint8_t>(base, i, simgpu::nv::FloatToE5M2(v)); return;
    default: StoreDouble(base, i, type, v); return;
  }
}

void StoreDouble(void* base, size_t i, cudnnDataType_t type, double v) {
  switch (type) {
    case CUDNN_DATA_DOUBLE: Write<double>(base, i, v); return;
    case CUDNN_DATA_FLOAT: Write<float>(base, i, static_cast<float>(v)); return;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2: StoreFloat(base, i, type, static_cast<float>(v)); return;
    case CUDNN_DATA_INT8: Write<int8_t>(base, i, SaturateRound<int8_t>(v)); return;
    case CUDNN_DATA_UINT8: Write<uint8_t>(base, i, SaturateRound<uint8_t>(v)); return;
    case CUDNN_DATA_BOOLEAN: Write<uint8_t>(base, i, v != 0 ? 1 : 0); return;
    case CUDNN_DATA_INT32: Write<int32_t>(base, i, SaturateRound<int32_t>(v)); return;
    case CUDNN_DATA_INT64: Write<int64_t>(base, i, SaturateRound<int64_t>(v)); return;
    default: return;
  }
}

}  // namespace simgpu::cudnn
