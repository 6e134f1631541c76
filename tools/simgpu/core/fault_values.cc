// Element faults: bit flips on the element's little-endian storage and stuck-at values. A value is rounded from
// double straight to the element type (one rounding, to nearest even), so a stuck-at value in FP16 or FP8 is the
// value a correctly rounded conversion gives, not a double-rounded one through FP32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tools/simgpu/core/env.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

// A binary floating-point format narrower than FP64, with subnormals. ieee: the all-ones exponent holds
// infinities and NaNs; otherwise (FP8 E4M3) only S.1111.111 is NaN and there is no infinity.
struct MiniFloat {
  int exp_bits;
  int mant_bits;
  bool ieee;
};
constexpr MiniFloat kHalf{5, 10, true};
constexpr MiniFloat kBf16{8, 7, true};
constexpr MiniFloat kE5M2{5, 2, true};
constexpr MiniFloat kE4M3{4, 3, false};

uint32_t NanBits(const MiniFloat& f) {
  uint32_t exp_all = (1u << f.exp_bits) - 1;
  if (!f.ieee) return (exp_all << f.mant_bits) | ((1u << f.mant_bits) - 1);  // S.1111.111
  return (exp_all << f.mant_bits) | (1u << (f.mant_bits - 1));             // quiet NaN
}

// Round to nearest, ties to even. Magnitudes that round beyond the largest finite value give infinity (ieee) or
// NaN (E4M3), as NVIDIA's non-saturating conversions (__NV_NOSAT) do.
uint32_t RoundTo(const MiniFloat& f, double v) {
  const uint32_t sign = std::signbit(v) ? 1u << (f.exp_bits + f.mant_bits) : 0u;
  if (std::isnan(v)) return sign | NanBits(f);
  const double a = std::fabs(v);
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  const uint32_t overflow = f.ieee ? exp_all << f.mant_bits : NanBits(f);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  int e2 = 0;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1): the unbiased exponent of a is e2 - 1
  const int exponent = std::max(e2 - 1, emin);
  // Quantum of the target at this exponent; a / quantum is exact (a power-of-two scaling).
  const double q = std::rint(std::ldexp(a, f.mant_bits - exponent));
  const uint64_t n = static_cast<uint64_t>(q);
  const uint64_t implicit = uint64_t{1} << f.mant_bits;
  uint64_t bits;
  if (e2 - 1 < emin) {
    bits = n;  // subnormal; n == implicit rolls into the smallest normal, which has the same encoding
  } else if (n == 2 * implicit) {
    bits = (static_cast<uint64_t>(exponent + 1 + bias) << f.mant_bits);
  } else {
    bits = (static_cast<uint64_t>(exponent + bias) << f.mant_bits) | (n - implicit);
  }
  const uint64_t max_finite = f.ieee ? (static_cast<uint64_t>(exp_all) << f.mant_bits) - 1 : NanBits(f) - 1;
  if (bits > max_finite) return sign | overflow;
  return sign | static_cast<uint32_t>(bits);
}

template <typename T>
bool StoreInteger(double v, void* out) {
  if (!(v == std::trunc(v))) return false;  // also rejects NaN and infinities
  // Bounds as exact doubles: min() is 0 or -2^digits, and the type holds everything below 2^digits.
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi_exclusive = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (v < lo || v >= hi_exclusive) return false;
  T t = static_cast<T>(v);
  memcpy(out, &t, sizeof t);
  return true;
}

template <typename T>
void StoreBits(T bits, void* out) {
  memcpy(out, &bits, sizeof bits);
}

}  // namespace

size_t DataTypeBytes(cudaDataType dtype) {
  switch (dtype) {
    case CUDA_R_64F: case CUDA_C_32F: case CUDA_R_64I: case CUDA_R_64U: case CUDA_C_32I: case CUDA_C_32U:
      return 8;
    case CUDA_C_64F: case CUDA_C_64I: case CUDA_C_64U:
      return 16;
    case CUDA_R_32F: case CUDA_R_32I: case CUDA_R_32U: case CUDA_C_16F: case CUDA_C_16BF: case CUDA_C_16I:
    case CUDA_C_16U:
      return 4;
    case CUDA_R_16F: case CUDA_R_16BF: case CUDA_R_16I: case CUDA_R_16U: case CUDA_C_8I: case CUDA_C_8U:
      return 2;
    case CUDA_R_8I: case CUDA_R_8U: case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: case CUDA_R_8F_UE8M0:
      return 1;
    default:
      return 0;
  }
}

bool StoreElementValue(double v, cudaDataType dtype, void* out) {
  switch (dtype) {
    case CUDA_R_64F: StoreBits(v, out); return true;
    case CUDA_R_32F: StoreBits(static_cast<float>(v), out); return true;  // IEEE conversion: nearest even
    case CUDA_R_16F: StoreBits(static_cast<uint16_t>(RoundTo(kHalf, v)), out); return true;
    case CUDA_R_16BF: StoreBits(static_cast<uint16_t>(RoundTo(kBf16, v)), out); return true;
    case CUDA_R_8F_E4M3: StoreBits(static_cast<uint8_t>(RoundTo(kE4M3, v)), out); return true;
    case CUDA_R_8F_E5M2: StoreBits(static_cast<uint8_t>(RoundTo(kE5M2, v)), out); return true;
    case CUDA_R_8I: return StoreInteger<int8_t>(v, out);
    case CUDA_R_8U: return StoreInteger<uint8_t>(v, out);
    case CUDA_R_16I: return StoreInteger<int16_t>(v, out);
    case CUDA_R_16U: return StoreInteger<uint16_t>(v, out);
    case CUDA_R_32I: return StoreInteger<int32_t>(v, out);
    case CUDA_R_32U: return StoreInteger<uint32_t>(v, out);
    case CUDA_R_64I: return StoreInteger<int64_t>(v, out);
    case CUDA_R_64U: return StoreInteger<uint64_t>(v, out);
    default: return false;
  }
}

void ApplyElementFault(const Fault& fault, void* elem_ptr, cudaDataType dtype) {
  const size_t bytes = DataTypeBytes(dtype);
  if (fault.action == FaultAction::kBitFlip) {
    if (bytes == 0) {
      Die("simgpu: SIMGPU_FAULT %s: bit flips in cudaDataType %d elements are not supported\n",
          DescribeFault(fault).c_str(), static_cast<int>(dtype));
    }
    FlipBit(fault, elem_ptr, bytes, static_cast<size_t>(fault.elem) + 1);
    return;
  }
  if (fault.action != FaultAction::kValue) {
    Die("simgpu: SIMGPU_FAULT %s: not an element fault (bit= or value=)\n", DescribeFault(fault).c_str());
  }
  if (!StoreElementValue(fault.value, dtype, elem_ptr)) {
    Die("simgpu: SIMGPU_FAULT %s: the value cannot be stored in a cudaDataType %d element%s\n",
        DescribeFault(fault).c_str(), static_cast<int>(dtype),
        DataTypeBytes(dtype) != 0 ? " (integer types need an integer in range)" : "");
  }
}

void ApplyElementFaults(FaultSite site, int64_t call, void* out, cudaDataType dtype, size_t n_elems) {
  const size_t bytes = DataTypeBytes(dtype);
  for (const Fault& f : MatchingFaults(site, call)) {
    if (f.action != FaultAction::kBitFlip && f.action != FaultAction::kValue) continue;
    CheckFaultElement(f, n_elems);
    ApplyElementFault(f, static_cast<unsigned char*>(out) + static_cast<size_t>(f.elem) * bytes, dtype);
  }
}

}  // namespace simgpu
