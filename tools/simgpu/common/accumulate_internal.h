// Internal to simgpu_accumulate: the per-precision product and addition rules of accumulate.h, shared by the
// scalar sums (accumulate.cc) and the panel kernels (accumulate_panel.cc) so that both round identically.
#ifndef TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_INTERNAL_H_
#define TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_INTERNAL_H_

#include <cstdint>
#include <cstring>

#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu {

struct Fp32Policy {
  using T = float;
  static float Prod(float x) { return x; }
  static float Add(float s, float x) { return s + x; }
};

struct Fp64Policy {
  using T = double;
  static double Prod(double x) { return x; }
  static double Add(double s, double x) { return s + x; }
};

inline float RoundToHalf(float x) { return simgpu::nv::HalfToFloat(simgpu::nv::FloatToHalf(x)); }

struct Fp16Policy {
  using T = float;
  static float Prod(float x) { return RoundToHalf(x); }
  static float Add(float s, float x) { return RoundToHalf(s + x); }
};

// The reduced-precision FP8 partial of one sequential run (accumulate.h, kFp8 with SIMGPU_FP8_ACC_BITS = bits).
class Fp8Partial {
 public:
  Fp8Partial(int bits, int64_t interval) : drop_mask_((uint64_t{1} << (52 - bits)) - 1), interval_(interval) {}
  void Add(float x) {
    partial_ = Truncate(partial_ + static_cast<double>(x));
    if (++count_ == interval_) Promote();
  }
  float Finish() {
    Promote();
    return total_;
  }

 private:
  double Truncate(double v) const {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    if ((u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) return v;  // inf or NaN
    u &= ~drop_mask_;
    memcpy(&v, &u, sizeof u);
    return v;
  }
  void Promote() {
    total_ = total_ + static_cast<float>(partial_);
    partial_ = 0.0;
    count_ = 0;
  }

  uint64_t drop_mask_;
  int64_t interval_;
  double partial_ = 0.0;
  float total_ = 0.0f;
  int64_t count_ = 0;
};

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_INTERNAL_H_
