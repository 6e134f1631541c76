#include "kernels/fingerprint.h"

#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::kernels {
namespace {

std::vector<unsigned char> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// Independent restatement of the definition in fingerprint.h, one byte at a time.
uint64_t Reference(const std::vector<unsigned char>& v) {
  uint64_t sum = 0;
  for (size_t i = 0; i * 8 < v.size(); ++i) {
    uint64_t w = 0;
    for (size_t b = 0; b < 8 && i * 8 + b < v.size(); ++b) w |= static_cast<uint64_t>(v[i * 8 + b]) << (8 * b);
    uint64_t z = w ^ (i * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    sum += z ^ (z >> 31);
  }
  return sum ^ v.size();
}

TEST(Fingerprint, MatchesDefinitionForAllTailLengths) {
  for (size_t n = 0; n < 70; ++n) {
    auto v = RandomBytes(n, static_cast<uint32_t>(n));
    EXPECT_EQ(FingerprintHost(v.data(), v.size()), Reference(v)) << n;
  }
}

TEST(Fingerprint, EveryBitFlipChangesIt) {
  auto v = RandomBytes(257, 1);
  const uint64_t base = FingerprintHost(v.data(), v.size());
  std::set<uint64_t> seen{base};
  for (size_t i = 0; i < v.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      v[i] ^= static_cast<unsigned char>(1 << bit);
      seen.insert(FingerprintHost(v.data(), v.size()));
      v[i] ^= static_cast<unsigned char>(1 << bit);
    }
  EXPECT_EQ(seen.size(), 257u * 8 + 1);
}

TEST(Fingerprint, SwappedWordsAndLengthMatter) {
  std::vector<unsigned char> a(16, 0), b(16, 0);
  a[0] = 1;
  b[8] = 1;  // same words, other positions
  EXPECT_NE(FingerprintHost(a.data(), 16), FingerprintHost(b.data(), 16));
  std::vector<unsigned char> z(24, 0);
  EXPECT_NE(FingerprintHost(z.data(), 16), FingerprintHost(z.data(), 24));
}

}  // namespace
}  // namespace ttrace::kernels
