// CRC-32C with the SSE4.2 crc32 instruction when the CPU has it (8 bytes per instruction), else a table, one
// byte at a time. Both compute the same function; trace_store_test checks them against each other.
//
// The instruction's latency is about three times its issue rate, so one chain of it runs at a third of what the
// core can do: a buffer of at least 3 x 8 KiB is checksummed as three interleaved lanes of 8 KiB, and the lanes'
// registers are joined by the CRC's linearity: the register after lanes A then B is (register after A) times
// x^(8 |B|) mod P, plus the register of B alone from 0. Multiplying by the constant x^(8 * 8 KiB) mod P is 32
// shift-and-xor steps, twice per 24 KiB.
#include "store/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ttrace::store {
namespace {

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

constexpr uint32_t kPoly = 0x82F63B78u;

// a * b mod P, polynomials in the reflected representation (bit 31 is x^0, bit 0 is x^31).
constexpr uint32_t MulMod(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1u) ? (b >> 1) ^ kPoly : b >> 1;  // b * x
  }
  return product;
}

// x^(8 * bytes) mod P: what a register is multiplied by when `bytes` zero bytes pass through it.
constexpr uint32_t ShiftFor(size_t bytes) {
  uint32_t v = 1u << 31;
  for (size_t i = 0; i < 8 * bytes; ++i) v = (v & 1u) ? (v >> 1) ^ kPoly : v >> 1;
  return v;
}

constexpr size_t kLane = 8192;
constexpr uint32_t kLaneShift = ShiftFor(kLane);
static_assert(MulMod(ShiftFor(3), ShiftFor(5)) == ShiftFor(8), "x^24 * x^40 = x^64 mod P");

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareCrc(const unsigned char* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 3 * kLane; p += 3 * kLane, n -= 3 * kLane) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kLane; i += 8) {
      uint64_t w0, w1, w2;
      memcpy(&w0, p + i, 8);
      memcpy(&w1, p + kLane + i, 8);
      memcpy(&w2, p + 2 * kLane + i, 8);
      c = _mm_crc32_u64(c, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    c = MulMod(kLaneShift, MulMod(kLaneShift, static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^
        static_cast<uint32_t>(c2);
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}
// Asked on first use, not in a static initializer: libttrace.so links this and runs no constructors.
bool HaveSse42() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return have;
}
#endif

}  // namespace

uint32_t Crc32cSoftware(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
#if defined(__x86_64__)
  if (HaveSse42()) return ~HardwareCrc(static_cast<const unsigned char*>(data), n, ~crc);
#endif
  return Crc32cSoftware(data, n, crc);
}

}  // namespace ttrace::store
