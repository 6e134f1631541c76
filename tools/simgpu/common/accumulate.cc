// SIMGPU_ACCUM / SIMGPU_FP8_ACC_BITS parsing, plans and the scalar sums of accumulate.h. The scalar Sum() is the
// definition the panel kernels (accumulate_panel.cc) must reproduce bit for bit; both are compiled with
// -ffp-contract=off so that every product and sum is rounded as stated, never fused by the compiler.
#include "tools/simgpu/common/accumulate.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "tools/simgpu/common/accumulate_internal.h"

namespace simgpu {
namespace {

bool ParseUnsigned(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

[[noreturn]] void DieWith(const char* name, const char* value, const std::string& error) {
  fprintf(stderr, "simgpu: malformed %s=\"%s\": %s\n", name, value, error.c_str());
  fflush(stderr);
  _exit(2);
}

template <class Policy>
typename Policy::T SumWith(const std::vector<AccumPlan::Run>& runs, const int64_t* perm, bool pairwise, int64_t k,
                           const typename Policy::T* x) {
  using T = typename Policy::T;
  if (pairwise) {
    T stack[64];
    int64_t size[64];
    int top = 0;
    for (int64_t p = 0; p < k; ++p) {
      stack[top] = Policy::Prod(x[p]);
      size[top++] = 1;
      while (top >= 2 && size[top - 1] == size[top - 2]) {
        stack[top - 2] = Policy::Add(stack[top - 2], stack[top - 1]);
        size[top - 2] *= 2;
        --top;
      }
    }
    if (top == 0) return T(0);
    T s = stack[top - 1];
    for (int i = top - 2; i >= 0; --i) s = Policy::Add(stack[i], s);
    return s;
  }
  T s = T(0);
  for (const AccumPlan::Run& run : runs) {
    T t = T(0);
    for (int64_t q = run.begin; q < run.end; ++q) t = Policy::Add(t, Policy::Prod(x[perm ? perm[q] : q]));
    s = Policy::Add(s, t);
  }
  return s;
}

float SumFp8Reduced(const std::vector<AccumPlan::Run>& runs, const int64_t* perm, int bits, int64_t interval,
                    const float* x) {
  float s = 0.0f;
  for (const AccumPlan::Run& run : runs) {
    Fp8Partial partial(bits, interval);
    for (int64_t q = run.begin; q < run.end; ++q) partial.Add(x[perm ? perm[q] : q]);
    s = s + partial.Finish();
  }
  return s;
}

const bool kParsedAtLoad = (AccumFromEnv(), Fp8AccBitsFromEnv(), true);

}  // namespace

bool ParseAccumConfig(const std::string& text, AccumConfig* out, std::string* error) {
  AccumConfig c;
  size_t colon = text.find(':');
  std::string name = text.substr(0, colon);
  std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool has_arg = colon != std::string::npos;
  auto fail = [&](const std::string& why) {
    *error = why + " (expected sequential, pairwise, blocked:K, splitk:S, random:SEED or blas; K, S >= 1)";
    return false;
  };
  if (text.empty() || (name == "sequential" && !has_arg)) {
    c.order = AccumOrder::kSequential;
  } else if (name == "pairwise" && !has_arg) {
    c.order = AccumOrder::kPairwise;
  } else if (name == "blas" && !has_arg) {
    c.order = AccumOrder::kBlas;
  } else if (name == "blocked" || name == "splitk") {
    uint64_t v = 0;
    if (!ParseUnsigned(arg, &v) || v == 0 || v > (uint64_t{1} << 62)) {
      return fail("\"" + arg + "\" is not a positive integer");
    }
    c.order = name == "blocked" ? AccumOrder::kBlocked : AccumOrder::kSplitK;
    c.param = static_cast<int64_t>(v);
  } else if (name == "random") {
    if (!ParseUnsigned(arg, &c.seed)) return fail("\"" + arg + "\" is not a seed in [0, 2^64)");
    c.order = AccumOrder::kRandom;
  } else {
    return fail("unknown order \"" + text + "\"");
  }
  *out = c;
  return true;
}

bool ParseFp8AccBits(const std::string& text, int* bits, std::string* error) {
  uint64_t v = 0;
  if (!ParseUnsigned(text, &v) || v < 1 || v > 23) {
    *error = "expected an integer in [1, 23] (mantissa bits of the FP8 partial sums)";
    return false;
  }
  *bits = static_cast<int>(v);
  return true;
}

AccumConfig AccumConfigOrDie(const char* value) {
  AccumConfig c;
  std::string error;
  if (value != nullptr && !ParseAccumConfig(value, &c, &error)) DieWith("SIMGPU_ACCUM", value, error);
  return c;
}

int Fp8AccBitsOrDie(const char* value) {
  int bits = 0;
  std::string error;
  if (value != nullptr && !ParseFp8AccBits(value, &bits, &error)) DieWith("SIMGPU_FP8_ACC_BITS", value, error);
  return bits;
}

const AccumConfig& AccumFromEnv() {
  static const AccumConfig config = AccumConfigOrDie(getenv("SIMGPU_ACCUM"));
  return config;
}

int Fp8AccBitsFromEnv() {
  static const int bits = Fp8AccBitsOrDie(getenv("SIMGPU_FP8_ACC_BITS"));
  return bits;
}

std::vector<int64_t> RandomOrder(uint64_t seed, int64_t call, int64_t k) {
  std::vector<int64_t> pi(k > 0 ? k : 0);
  for (int64_t q = 0; q < k; ++q) pi[q] = q;
  uint64_t z = seed ^ (static_cast<uint64_t>(call) * 0x9E3779B97F4A7C15ull);
  auto next = [&z] {
    z += 0x9E3779B97F4A7C15ull;
    uint64_t r = z;
    r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
    r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
    return r ^ (r >> 31);
  };
  for (int64_t q = k - 1; q >= 1; --q) std::swap(pi[q], pi[next() % static_cast<uint64_t>(q + 1)]);
  return pi;
}

AccumPlan::AccumPlan(const AccumConfig& config, AccumPrecision precision, int64_t k, int64_t call, int fp8_bits,
                     int64_t promote_interval)
    : config_(config),
      precision_(precision),
      k_(k < 0 ? 0 : k),
      fp8_bits_(fp8_bits),
      promote_interval_(promote_interval) {
  (void)kParsedAtLoad;
  if (precision_ == AccumPrecision::kFp8 && fp8_bits_ == 0) precision_ = AccumPrecision::kFp32;
  switch (config_.order) {
    case AccumOrder::kBlocked:
      for (int64_t b = 0; b < k_; b += config_.param) runs_.push_back({b, std::min(k_, b + config_.param)});
      break;
    case AccumOrder::kSplitK:
      // Empty slices add +0 to a sum that is never -0, which changes nothing: only non-empty ones are kept.
      // With S >= k each non-empty slice holds one product.
      if (config_.param >= k_) {
        for (int64_t p = 0; p < k_; ++p) runs_.push_back({p, p + 1});
      } else {
        for (int64_t s = 0; s < config_.param; ++s) {
          const __int128 kk = k_, ss = config_.param;
          runs_.push_back({static_cast<int64_t>(kk * s / ss), static_cast<int64_t>(kk * (s + 1) / ss)});
        }
      }
      break;
    case AccumOrder::kRandom:
      perm_ = RandomOrder(config_.seed, call, k_);
      runs_.push_back({0, k_});
      break;
    default:
      runs_.push_back({0, k_});
      break;
  }
}

float AccumPlan::Sum(const float* x) const {
  const int64_t* perm = perm_.empty() ? nullptr : perm_.data();
  const bool pairwise = config_.order == AccumOrder::kPairwise;
  switch (precision_) {
    case AccumPrecision::kFp16:
      return SumWith<Fp16Policy>(runs_, perm, pairwise, k_, x);
    case AccumPrecision::kFp8:
      if (!pairwise) return SumFp8Reduced(runs_, perm, fp8_bits_, promote_interval_, x);
      return SumWith<Fp32Policy>(runs_, perm, pairwise, k_, x);
    default:
      return SumWith<Fp32Policy>(runs_, perm, pairwise, k_, x);
  }
}

double AccumPlan::Sum(const double* x) const {
  const int64_t* perm = perm_.empty() ? nullptr : perm_.data();
  return SumWith<Fp64Policy>(runs_, perm, config_.order == AccumOrder::kPairwise, k_, x);
}

}  // namespace simgpu
