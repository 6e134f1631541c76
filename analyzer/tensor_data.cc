// Element decoding is a switch per element: payloads are decoded once per check, and the switch costs little
// next to the O(m·n·k) replay. 16-bit formats go through kernels/dtype.h, the conversions the shim and simgpu use.
#include "analyzer/tensor_data.h"

#include <cmath>
#include <cstring>

#include "kernels/dtype.h"

namespace ttrace::analyzer {

using format::DType;

namespace {

template <typename T>
T Load(const char* data, uint64_t i) {
  T v;
  memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

std::string DTypeName(uint8_t dtype) {
  switch (static_cast<DType>(dtype)) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "f64";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kU32: return "u32";
    case DType::kI64: return "i64";
    case DType::kU64: return "u64";
    case DType::kE4M3: return "e4m3";
    case DType::kE5M2: return "e5m2";
    case DType::kInvalid: break;
  }
  return "dtype" + std::to_string(dtype);
}

format::DType DTypeFromCuda(int32_t cuda_type) {
  switch (cuda_type) {
    case 0: return DType::kF32;    // CUDA_R_32F
    case 1: return DType::kF64;    // CUDA_R_64F
    case 2: return DType::kF16;    // CUDA_R_16F
    case 3: return DType::kI8;     // CUDA_R_8I
    case 8: return DType::kU8;     // CUDA_R_8U
    case 10: return DType::kI32;   // CUDA_R_32I
    case 12: return DType::kU32;   // CUDA_R_32U
    case 14: return DType::kBF16;  // CUDA_R_16BF
    case 24: return DType::kI64;   // CUDA_R_64I
    case 26: return DType::kU64;   // CUDA_R_64U
    case 28: return DType::kE4M3;  // CUDA_R_8F_E4M3
    case 29: return DType::kE5M2;  // CUDA_R_8F_E5M2
    default: return DType::kInvalid;
  }
}

format::DType DTypeFromNccl(int32_t nccl_type) {
  switch (nccl_type) {
    case 0: return DType::kI8;
    case 1: return DType::kU8;
    case 2: return DType::kI32;
    case 3: return DType::kU32;
    case 4: return DType::kI64;
    case 5: return DType::kU64;
    case 6: return DType::kF16;
    case 7: return DType::kF32;
    case 8: return DType::kF64;
    case 9: return DType::kBF16;
    case 10: return DType::kE4M3;
    case 11: return DType::kE5M2;
    default: return DType::kInvalid;
  }
}

std::string CudaTypeName(int32_t cuda_type) {
  switch (cuda_type) {
    case 0: return "CUDA_R_32F";
    case 1: return "CUDA_R_64F";
    case 2: return "CUDA_R_16F";
    case 3: return "CUDA_R_8I";
    case 4: return "CUDA_C_32F";
    case 5: return "CUDA_C_64F";
    case 6: return "CUDA_C_16F";
    case 8: return "CUDA_R_8U";
    case 10: return "CUDA_R_32I";
    case 12: return "CUDA_R_32U";
    case 14: return "CUDA_R_16BF";
    case 15: return "CUDA_C_16BF";
    case 24: return "CUDA_R_64I";
    case 26: return "CUDA_R_64U";
    case 28: return "CUDA_R_8F_E4M3";
    case 29: return "CUDA_R_8F_E5M2";
    default: return std::to_string(cuda_type);
  }
}

std::string NcclTypeName(int32_t nccl_type) {
  static const char* const kNames[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",    "ncclUint32",
                                       "ncclInt64",   "ncclUint64",  "ncclFloat16",  "ncclFloat32",
                                       "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  if (nccl_type >= 0 && nccl_type < 12) return kNames[nccl_type];
  return std::to_string(nccl_type);
}

bool IsFloatDType(format::DType d) {
  switch (d) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF64:
    case DType::kE4M3:
    case DType::kE5M2:
      return true;
    default:
      return false;
  }
}

float E4m3ToFloat(uint8_t v) {
  const float sign = (v & 0x80u) ? -1.0f : 1.0f;
  const int exp = (v >> 3) & 0xf;
  const int mant = v & 0x7;
  if (exp == 0xf && mant == 0x7) return std::nanf("");
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -9);  // subnormal: m/8 * 2^-6
  return sign * std::ldexp(static_cast<float>(8 + mant), exp - 10);      // (1 + m/8) * 2^(exp-7)
}

float E5m2ToFloat(uint8_t v) { return kernels::HalfToFloat(static_cast<uint16_t>(v) << 8); }

double DecodeElement(format::DType dtype, const char* data, uint64_t i) {
  switch (dtype) {
    case DType::kF32: return Load<float>(data, i);
    case DType::kF16: return kernels::HalfToFloat(Load<uint16_t>(data, i));
    case DType::kBF16: return kernels::Bf16ToFloat(Load<uint16_t>(data, i));
    case DType::kF64: return Load<double>(data, i);
    case DType::kI8: return Load<int8_t>(data, i);
    case DType::kU8: return Load<uint8_t>(data, i);
    case DType::kI32: return Load<int32_t>(data, i);
    case DType::kU32: return Load<uint32_t>(data, i);
    case DType::kI64: return static_cast<double>(Load<int64_t>(data, i));
    case DType::kU64: return static_cast<double>(Load<uint64_t>(data, i));
    case DType::kE4M3: return E4m3ToFloat(Load<uint8_t>(data, i));
    case DType::kE5M2: return E5m2ToFloat(Load<uint8_t>(data, i));
    case DType::kInvalid: break;
  }
  return std::nan("");
}

std::vector<double> DecodeAll(format::DType dtype, absl::string_view payload) {
  const uint32_t size = format::DTypeSize(static_cast<uint8_t>(dtype));
  std::vector<double> out;
  if (size == 0) return out;
  const uint64_t n = payload.size() / size;
  out.resize(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = DecodeElement(dtype, payload.data(), i);
  return out;
}

}  // namespace ttrace::analyzer
