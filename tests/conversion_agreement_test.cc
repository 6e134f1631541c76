// The analyzer's conversions (kernels/dtype.h, kernels/fp8.h, its own code) against the device side's
// (tools/simgpu/common/nv_dtype.h: NVIDIA's cuda_fp16.h / cuda_bf16.h / cuda_fp8.h host code, used by simgpu and
// the workloads). The two are separate implementations on purpose; they must give the same bits:
// - widening: every FP16, BF16, E4M3 and E5M2 code;
// - narrowing: every value of each format, the FP32 neighbours of each, every midpoint between two neighbouring
//   values (the ties) and the FP32 neighbours of each midpoint, both saturation modes for FP8; plus every 1021st
//   FP32 bit pattern (4.2 million, all exponents and both signs).
// NaN: a NaN in gives a NaN out on both sides (the payload is not compared: IEEE leaves it open, and the analyzer
// keeps the input's where NVIDIA's host code returns a canonical NaN).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dtype.h"
#include "kernels/fp8.h"
#include "tools/simgpu/common/nv_dtype.h"

namespace {

namespace kd = ttrace::kernels;
namespace nv = simgpu::nv;

struct Format {
  const char* name;
  int bits;                                 // 16 or 8
  std::function<float(uint32_t)> widen_kd;  // code -> FP32, analyzer
  std::function<float(uint32_t)> widen_nv;  // code -> FP32, device side
  std::function<uint32_t(float)> narrow_kd;
  std::function<uint32_t(float)> narrow_nv;
};

std::vector<Format> Formats() {
  std::vector<Format> f;
  f.push_back({"f16", 16, [](uint32_t c) { return kd::HalfToFloat(static_cast<uint16_t>(c)); },
               [](uint32_t c) { return nv::HalfToFloat(static_cast<uint16_t>(c)); },
               [](float x) -> uint32_t { return kd::FloatToHalf(x); },
               [](float x) -> uint32_t { return nv::FloatToHalf(x); }});
  f.push_back({"bf16", 16, [](uint32_t c) { return kd::Bf16ToFloat(static_cast<uint16_t>(c)); },
               [](uint32_t c) { return nv::Bf16ToFloat(static_cast<uint16_t>(c)); },
               [](float x) -> uint32_t { return kd::FloatToBf16(x); },
               [](float x) -> uint32_t { return nv::FloatToBf16(x); }});
  for (bool sat : {true, false}) {
    const kd::Fp8Saturation ks = sat ? kd::Fp8Saturation::kSatFinite : kd::Fp8Saturation::kNoSat;
    const nv::Fp8Saturation ns = sat ? nv::Fp8Saturation::kSatFinite : nv::Fp8Saturation::kNoSat;
    f.push_back({sat ? "e4m3 satfinite" : "e4m3 nosat", 8,
                 [](uint32_t c) { return kd::E4M3ToFloat(static_cast<uint8_t>(c)); },
                 [](uint32_t c) { return nv::E4M3ToFloat(static_cast<uint8_t>(c)); },
                 [ks](float x) -> uint32_t { return kd::FloatToE4M3(x, ks); },
                 [ns](float x) -> uint32_t { return nv::FloatToE4M3(x, ns); }});
    f.push_back({sat ? "e5m2 satfinite" : "e5m2 nosat", 8,
                 [](uint32_t c) { return kd::E5M2ToFloat(static_cast<uint8_t>(c)); },
                 [](uint32_t c) { return nv::E5M2ToFloat(static_cast<uint8_t>(c)); },
                 [ks](float x) -> uint32_t { return kd::FloatToE5M2(x, ks); },
                 [ns](float x) -> uint32_t { return nv::FloatToE5M2(x, ns); }});
  }
  return f;
}

bool IsNanCode(const Format& f, uint32_t code) { return std::isnan(f.widen_nv(code)); }

// Same bits, or a NaN on both sides.
::testing::AssertionResult SameNarrowing(const Format& f, float x) {
  const uint32_t a = f.narrow_kd(x), b = f.narrow_nv(x);
  if (a == b || (IsNanCode(f, a) && IsNanCode(f, b))) return ::testing::AssertionSuccess();
  char text[96];
  snprintf(text, sizeof text, " of FP32 0x%08x (%.9g): analyzer 0x%x, device side 0x%x", kd::FloatBits(x), x, a, b);
  return ::testing::AssertionFailure() << f.name << text;
}

TEST(ConversionAgreement, WideningEveryCode) {
  for (const Format& f : Formats()) {
    uint32_t nans = 0;
    for (uint32_t c = 0; c < (1u << f.bits); ++c) {
      const float a = f.widen_kd(c), b = f.widen_nv(c);
      if (std::isnan(b)) {
        ASSERT_TRUE(std::isnan(a)) << f.name << " code 0x" << std::hex << c;
        ++nans;
        continue;
      }
      ASSERT_EQ(kd::FloatBits(a), kd::FloatBits(b)) << f.name << " code 0x" << std::hex << c;
    }
    EXPECT_GT(nans, 0u) << f.name;
  }
}

TEST(ConversionAgreement, NarrowingAtEveryValueAndEveryTie) {
  for (const Format& f : Formats()) {
    uint64_t checked = 0;
    for (uint32_t c = 0; c < (1u << f.bits); ++c) {
      const float v = f.widen_nv(c);
      if (std::isnan(v)) continue;
      std::vector<float> xs = {v, std::nextafter(v, INFINITY), std::nextafter(v, -INFINITY)};
      // The next value away from zero (for the largest finite value: the first value past it, where it would be).
      const uint32_t next_code = c + 1;
      if (next_code < (1u << f.bits) && ((next_code ^ c) & (1u << (f.bits - 1))) == 0 && std::isfinite(v)) {
        const float w = f.widen_nv(next_code);
        if (!std::isnan(w) && std::isfinite(w)) {
          const float mid = static_cast<float>((static_cast<double>(v) + w) / 2);  // exact: few significant bits
          xs.insert(xs.end(), {mid, std::nextafter(mid, INFINITY), std::nextafter(mid, -INFINITY)});
        }
      }
      for (float x : xs) {
        ASSERT_TRUE(SameNarrowing(f, x));
        ++checked;
      }
    }
    for (float x : {INFINITY, -INFINITY, NAN, -NAN, 3.0e38f, -3.0e38f, 65520.0f, 57344.0f, 61440.0f, 448.0f, 464.0f,
                    480.0f}) {
      ASSERT_TRUE(SameNarrowing(f, x));
    }
    EXPECT_GT(checked, f.bits == 16 ? 300000u : 1000u) << f.name;
  }
}

TEST(ConversionAgreement, NarrowingOnAStrideOfAllFp32Patterns) {
  const std::vector<Format> formats = Formats();
  uint64_t checked = 0;
  for (uint64_t i = 0; i < (1ull << 32); i += 1021) {
    const float x = kd::BitsFloat(static_cast<uint32_t>(i));
    for (const Format& f : formats) ASSERT_TRUE(SameNarrowing(f, x));
    ++checked;
  }
  EXPECT_GT(checked, 4000000u);
}

}  // namespace
