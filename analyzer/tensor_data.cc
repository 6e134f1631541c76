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
  const format::DTypeInfo* t = format::FindDType(dtype);
  return t != nullptr ? t->name : "dtype" + std::to_string(dtype);
}

std::string CudaTypeName(int32_t cuda_type) {
  for (const format::DTypeInfo& t : format::kDTypes)
    if (t.cuda == cuda_type) return t.cuda_name;
  // Types with no DType, named for "unsupported type" messages.
  switch (cuda_type) {
    case 4: return "CUDA_C_32F";
    case 5: return "CUDA_C_64F";
    case 6: return "CUDA_C_16F";
    case 15: return "CUDA_C_16BF";
    default: return std::to_string(cuda_type);
  }
}

std::string NcclTypeName(int32_t nccl_type) {
  for (const format::DTypeInfo& t : format::kDTypes)
    if (t.nccl == nccl_type) return t.nccl_name;
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
  const char* data = payload.data();
  // The dtype switch outside the loop: 16-bit and 32-bit floats decode at memory speed (a 4096 x 4096 operand
  // is 16 M elements).
  switch (dtype) {
    case DType::kF32:
      for (uint64_t i = 0; i < n; ++i) out[i] = Load<float>(data, i);
      break;
    case DType::kF64:
      for (uint64_t i = 0; i < n; ++i) out[i] = Load<double>(data, i);
      break;
    case DType::kBF16:
      for (uint64_t i = 0; i < n; ++i) out[i] = kernels::Bf16ToFloat(Load<uint16_t>(data, i));
      break;
    case DType::kF16:
      for (uint64_t i = 0; i < n; ++i) out[i] = kernels::HalfToFloat(Load<uint16_t>(data, i));
      break;
    default:
      for (uint64_t i = 0; i < n; ++i) out[i] = DecodeElement(dtype, data, i);
      break;
  }
  return out;
}

namespace {

template <typename Convert>
void Strided(const char* data, uint64_t first, uint64_t stride, uint64_t count, double* out, uint64_t out_stride,
             Convert convert) {
  if (stride == 1 && out_stride == 1) {
    for (uint64_t i = 0; i < count; ++i) out[i] = convert(data, first + i);
  } else {
    for (uint64_t i = 0; i < count; ++i) out[i * out_stride] = convert(data, first + i * stride);
  }
}

template <typename Convert>
void Gather(const char* data, uint64_t first, const int64_t* offsets, uint64_t count, double* out, Convert convert) {
  for (uint64_t i = 0; i < count; ++i) out[i] = convert(data, first + static_cast<uint64_t>(offsets[i]));
}

}  // namespace

void DecodeGather(format::DType dtype, const char* data, uint64_t first, const int64_t* offsets, uint64_t count,
                  double* out) {
  switch (dtype) {
    case DType::kF32:
      return Gather(data, first, offsets, count, out, [](const char* d, uint64_t i) -> double { return Load<float>(d, i); });
    case DType::kF64:
      return Gather(data, first, offsets, count, out, [](const char* d, uint64_t i) { return Load<double>(d, i); });
    case DType::kBF16:
      return Gather(data, first, offsets, count, out,
                    [](const char* d, uint64_t i) -> double { return kernels::Bf16ToFloat(Load<uint16_t>(d, i)); });
    case DType::kF16:
      return Gather(data, first, offsets, count, out,
                    [](const char* d, uint64_t i) -> double { return kernels::HalfToFloat(Load<uint16_t>(d, i)); });
    default:
      return Gather(data, first, offsets, count, out,
                    [dtype](const char* d, uint64_t i) { return DecodeElement(dtype, d, i); });
  }
}

void DecodeStrided(format::DType dtype, const char* data, uint64_t first, uint64_t stride, uint64_t count, double* out,
                   uint64_t out_stride) {
  switch (dtype) {
    case DType::kF32:
      return Strided(data, first, stride, count, out, out_stride,
                     [](const char* d, uint64_t i) -> double { return Load<float>(d, i); });
    case DType::kF64:
      return Strided(data, first, stride, count, out, out_stride,
                     [](const char* d, uint64_t i) { return Load<double>(d, i); });
    case DType::kBF16:
      return Strided(data, first, stride, count, out, out_stride,
                     [](const char* d, uint64_t i) -> double { return kernels::Bf16ToFloat(Load<uint16_t>(d, i)); });
    case DType::kF16:
      return Strided(data, first, stride, count, out, out_stride,
                     [](const char* d, uint64_t i) -> double { return kernels::HalfToFloat(Load<uint16_t>(d, i)); });
    default:
      return Strided(data, first, stride, count, out, out_stride,
                     [dtype](const char* d, uint64_t i) { return DecodeElement(dtype, d, i); });
  }
}

}  // namespace ttrace::analyzer
