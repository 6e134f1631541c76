// store/float_codec.h: exact round trip for every BF16/FP16/FP8 bit pattern and for random and special FP32/FP64
// values at every block and stream boundary; the ratios the codec exists for (Gaussian BF16 >= 1.5x, FP32 >= 1.2x,
// against the exponent entropy it must come near); and hostile input: every truncation, every corrupted byte of
// small encodings and random garbage are rejected or decoded without a read past the input (the input ends at an
// unmapped page) or a write outside the output (guard bytes). float_codec_scalar_test runs the same tests on the
// codec built without its SSE2 and BMI2 paths.
#include "store/float_codec.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dtype.h"
#include "kernels/fp8.h"

namespace ttrace::store {
namespace {

std::string Encode(const void* data, size_t n, size_t e, int version = kFloatCodecVersion) {
  std::string out(FloatCodecMaxBytes(n, e), '\0');
  const size_t size = version == 1   ? FloatEncodeVersion1(data, n, e, out.data())
                      : version == 2 ? FloatEncodeVersion2(data, n, e, out.data())
                                     : FloatEncode(data, n, e, out.data());
  EXPECT_LE(size, out.size());
  out.resize(size);
  return out;
}

uint32_t Load32At(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

template <typename T>
void ExpectRoundTrip(const std::vector<T>& v, const std::string& what, int version = kFloatCodecVersion) {
  const std::string enc = Encode(v.data(), v.size(), sizeof(T), version);
  ASSERT_EQ(enc[0], version) << what;
  std::vector<T> back(v.size());
  const char* err = FloatDecode(enc.data(), enc.size(), sizeof(T), back.data(), back.size() * sizeof(T));
  ASSERT_EQ(err, nullptr) << what << ": " << err;
  ASSERT_TRUE(back == v) << what;  // not memcmp: the data() of an empty vector may be null (UBSan: nonnull)
}

template <typename T>
double Ratio(const std::vector<T>& v) {
  return static_cast<double>(v.size() * sizeof(T)) / static_cast<double>(Encode(v.data(), v.size(), sizeof(T)).size());
}

// Shannon entropy (bits) of the top byte after the sign rotation: what no coder of that byte alone beats.
template <typename T>
double TopByteEntropy(const std::vector<T>& v) {
  double f[256] = {};
  for (T x : v) f[static_cast<uint8_t>(static_cast<T>((x << 1) | (x >> (8 * sizeof(T) - 1))) >> (8 * sizeof(T) - 8))]++;
  double h = 0;
  for (double c : f)
    if (c) h -= c / v.size() * std::log2(c / v.size());
  return h;
}

std::vector<float> Gaussian(size_t n, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(FloatCodecTest, EveryTwoByteAndOneBytePatternRoundTrips) {
  std::vector<uint16_t> all(1 << 16);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  ExpectRoundTrip(all, "2^16 patterns in order");
  std::mt19937 rng(1);
  std::shuffle(all.begin(), all.end(), rng);
  ExpectRoundTrip(all, "2^16 patterns shuffled");
  std::vector<uint16_t> twice(all);
  twice.insert(twice.end(), all.begin(), all.end());
  twice.push_back(0x8000);  // -0, in a third block of one element
  ExpectRoundTrip(twice, "2^17 + 1 patterns (three blocks)");
  std::vector<uint8_t> fp8(256 * 37);
  for (size_t i = 0; i < fp8.size(); ++i) fp8[i] = static_cast<uint8_t>(i * 7);
  ExpectRoundTrip(fp8, "every FP8 pattern");
}

TEST(FloatCodecTest, SpecialAndRandomWideValuesRoundTripAtEverySize) {
  const uint32_t specials[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001,
                               0x00000001, 0x807fffff, 0x00800000, 0x3f800000, 0xbf800000, 0x7f7fffff};
  std::mt19937_64 rng(2);
  for (size_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 1000, 65535, 65536, 65537, 200003}) {
    std::vector<uint32_t> f32(n);
    std::vector<uint64_t> f64(n);
    const std::vector<float> g = Gaussian(n, static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) {
      switch (rng() % 3) {
        case 0: f32[i] = specials[rng() % std::size(specials)]; break;
        case 1: f32[i] = static_cast<uint32_t>(rng()); break;
        default: memcpy(&f32[i], &g[i], 4);
      }
      f64[i] = rng() % 2 ? rng() : static_cast<uint64_t>(f32[i]) << 32;
    }
    ExpectRoundTrip(f32, "FP32 mixed n=" + std::to_string(n));
    ExpectRoundTrip(f64, "FP64 mixed n=" + std::to_string(n));
    std::vector<uint32_t> gauss(n);
    if (n > 0) memcpy(gauss.data(), g.data(), 4 * n);  // n = 0: data() may be null (UBSan: nonnull)
    ExpectRoundTrip(gauss, "FP32 Gaussian n=" + std::to_string(n));
    std::vector<uint16_t> bf16(n);
    for (size_t i = 0; i < n; ++i) bf16[i] = kernels::FloatToBf16(g[i]);
    ExpectRoundTrip(bf16, "BF16 Gaussian n=" + std::to_string(n));
  }
}

TEST(FloatCodecTest, GaussianRatiosReachTheGoalsNearTheExponentEntropy) {
  // 1 Mi elements, sigma 0.02 (weights-like). The exponent plane is Huffman-coded, the mantissa stored raw, so the
  // ratio's ceiling is 16 / (8 + H) for BF16 and 32 / (24 + H) for FP32, H the rotated top byte's entropy.
  const std::vector<float> g = Gaussian(1 << 20, 3);
  std::vector<uint16_t> bf16(g.size()), fp16(g.size());
  std::vector<uint32_t> fp32(g.size());
  std::vector<uint8_t> e4m3(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    bf16[i] = kernels::FloatToBf16(g[i]);
    fp16[i] = kernels::FloatToHalf(g[i]);
    memcpy(&fp32[i], &g[i], 4);
    e4m3[i] = kernels::FloatToE4M3(g[i] * 100);
  }
  const double h = TopByteEntropy(bf16);
  const double bf16_limit = 16 / (8 + h), fp32_limit = 32 / (24 + TopByteEntropy(fp32));
  EXPECT_GE(Ratio(bf16), 1.5);
  EXPECT_GE(Ratio(fp32), 1.2);
  EXPECT_LE(Ratio(bf16), bf16_limit);   // no coder of the exponent byte alone does better: the ratio is honest
  EXPECT_GE(Ratio(bf16), 0.99 * bf16_limit);  // within 1% of it (Huffman redundancy + tables)
  EXPECT_LE(Ratio(fp32), fp32_limit);
  EXPECT_GE(Ratio(fp32), 0.995 * fp32_limit);
  // FP16 and FP8: the top byte holds mantissa bits too; the ratio only has to beat raw by a margin.
  EXPECT_GE(Ratio(fp16), 1.15);
  EXPECT_LE(Ratio(fp16), 16 / (8 + TopByteEntropy(fp16)));
  EXPECT_GE(Ratio(e4m3), 1.1);
  EXPECT_LE(Ratio(e4m3), 8 / TopByteEntropy(e4m3));
}

TEST(FloatCodecTest, IncompressibleDataCostsAtMostAByteAPlanePerBlock) {
  std::mt19937_64 rng(4);
  std::vector<uint64_t> v(100000);
  for (uint64_t& x : v) x = rng();
  const size_t blocks = 2;  // 100000 elements of 2^16
  EXPECT_LE(Encode(v.data(), v.size(), 8).size(), 16 + v.size() * 8 + blocks * 8);
  std::vector<uint32_t> w(100000);
  for (uint32_t& x : w) x = static_cast<uint32_t>(rng());
  EXPECT_LE(Encode(w.data(), w.size(), 4).size(), 16 + w.size() * 4 + blocks * 4);
  EXPECT_EQ(FloatCodecMaxBytes(100000, 4), 16 + 100000 * 4 + blocks * 4);
}

TEST(FloatCodecTest, ConstantAndSkewedLowerPlanesAreCoded) {
  // FP32 holding BF16 values: the two low planes are one byte each, so ~2x beyond the exponent's gain.
  const std::vector<float> g = Gaussian(1 << 18, 5);
  std::vector<uint32_t> widened(g.size());
  for (size_t i = 0; i < g.size(); ++i) widened[i] = static_cast<uint32_t>(kernels::FloatToBf16(g[i])) << 16;
  EXPECT_GE(Ratio(widened), 2 * 1.5);
  ExpectRoundTrip(widened, "BF16 in FP32");
  std::vector<uint32_t> zeros(100000, 0);
  EXPECT_LT(Encode(zeros.data(), zeros.size(), 4).size(), 64u);
  ExpectRoundTrip(zeros, "zeros");
  // A quantized signal (small integers as FP32): the second plane is skewed too and gets a code of its own.
  std::vector<uint32_t> q(1 << 17);
  std::mt19937 rng(6);
  for (uint32_t& x : q) {
    const float f = static_cast<float>(static_cast<int>(rng() % 200) - 100);
    memcpy(&x, &f, 4);
  }
  EXPECT_GE(Ratio(q), 2.5);
  ExpectRoundTrip(q, "quantized");
}

// A plane's byte (the rotated element) as the FP8 element that holds it.
uint8_t Fp8WithTopByte(uint8_t r) { return static_cast<uint8_t>((r >> 1) | (r << 7)); }

// An FP8 element whose plane byte is a sum of two uniform bytes (191 values, ~7 bits a symbol: FP8 E4M3's
// ~6.5): too long a code for two symbols in most windows.
uint8_t WideCodeByte(std::mt19937& rng) { return Fp8WithTopByte(static_cast<uint8_t>(0x20 + rng() % 96 + rng() % 96)); }

TEST(FloatCodecTest, BytesTheSampleMissesStillHaveCodes) {
  // The encoder builds a block's code from a sample of its bytes (a quarter). Four common bytes, and 300 rare ones
  // placed once each at random: most of them are not in the sample, and each must still have a code.
  std::mt19937 rng(10);
  std::vector<uint8_t> v(4 << 16);
  for (uint8_t& x : v) x = Fp8WithTopByte(static_cast<uint8_t>(0x70 + 2 * (rng() % 4)));
  for (int k = 0; k < 300; ++k) v[rng() % v.size()] = static_cast<uint8_t>(rng());
  const std::string enc = Encode(v.data(), v.size(), 1);
  // (The rare bytes' long codes leave fewer than 7/8 of the windows with two codes: eight streams.)
  EXPECT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes]), 3) << "expected an eight-stream Huffman plane";
  ExpectRoundTrip(v, "rare bytes");
  EXPECT_GE(Ratio(v), 3.3);  // ~2.3 bits a byte: 2 for the four, the rare ones and the tables on top
}

TEST(FloatCodecTest, ANarrowCodeHoldsNoBytesThatDoNotOccur) {
  // Three bytes spread over a range of 97 (smooth data, quantized values): a code of the three alone takes 1, 2
  // and 2 bits (ratio 8 / (5/3) = 4.8 less the tables); the 94 bytes between them that never occur must not take
  // code space from them (with a code each they would cost the common bytes ~1/3 bit).
  std::mt19937 rng(11);
  std::vector<uint8_t> v(4 << 16);
  for (uint8_t& x : v) x = Fp8WithTopByte(static_cast<uint8_t>(0x10 + 0x30 * (rng() % 3)));
  ExpectRoundTrip(v, "three bytes");
  EXPECT_GE(Ratio(v), 4.75);
  EXPECT_LE(Ratio(v), 4.8);
}

TEST(FloatCodecTest, ANarrowCodeFindsEveryByteTheSampleMissed) {
  // A narrow sampled code (two bytes: the low plane of FP32 sums of BF16 values) whose plane holds rare bytes the
  // sample missed: the pass that marks the bytes present must find each of them (else it has no code and the block
  // does not round-trip), whatever its place in a 32-byte vector (the AVX2 pass, codec32) or in the tail after
  // the last whole vector. Every byte value occurs once, 64 of them a block, in chunks the sample does not read.
  std::mt19937 rng(32);
  const size_t block = size_t{1} << 16;
  for (size_t tail : {size_t{0}, size_t{31}, size_t{1000}}) {
    const size_t n = 3 * block + (tail ? block / 2 + tail : block);
    std::vector<uint8_t> v(n);
    for (uint8_t& x : v) x = Fp8WithTopByte(rng() % 4 ? 0x00 : 0x01);
    for (int c = 0; c < 256; ++c) {
      const size_t b = static_cast<size_t>(c) / 64, k = static_cast<size_t>(c) % 64;
      const size_t size = std::min(block, n - b * block);
      // A chunk the sample skips (its 16-byte chunk of every 64 is at a phase hashed from the chunk's index),
      // at offset k within it, so the 64 bytes of a block lie at every place of a 32-byte vector; the last
      // block's bytes at its end when it has a tail.
      size_t at;
      if (tail && b == 3) {
        at = size - 1 - k;
      } else {
        const size_t g = k * 13 + 7;
        const uint32_t phase = (static_cast<uint32_t>(g) * 0x9e3779b1u) >> 30;
        at = g * 64 + (phase + 1) % 4 * 16 + k % 16;
      }
      v[b * block + at] = Fp8WithTopByte(static_cast<uint8_t>(c));
    }
    const std::string at = "tail " + std::to_string(tail);
    ExpectRoundTrip(v, "rare bytes, two common ones, " + at);
  }
}

TEST(FloatCodecTest, ACodeThatComesOutLargerThanRawIsNotKept) {
  // The sample misleads: the chunks it reads (the encoder's rule: one 16-byte chunk of every 64, at a phase hashed
  // from the chunk's index) hold 8 bytes (3 bits each), the other chunks 248 others, which the code then gives 12
  // bits each (~9.75 bits a byte in all). The coded plane comes out larger than raw, and the block is stored raw.
  std::mt19937 rng(12);
  const size_t n = size_t{1} << 16;
  std::vector<uint8_t> v(n);
  for (size_t g = 0; g < n / 64; ++g) {
    const uint32_t phase = (static_cast<uint32_t>(g) * 0x9e3779b1u) >> 30;
    for (size_t k = 0; k < 64; ++k) {
      const bool sampled = k / 16 == phase;
      v[g * 64 + k] = Fp8WithTopByte(static_cast<uint8_t>(sampled ? rng() % 8 : 8 + rng() % 248));
    }
  }
  // Room past the bound, so that an encoder which kept the code reports its size here instead of corrupting the heap.
  std::string enc(FloatCodecMaxBytes(n, 1) + n, '\0');
  enc.resize(FloatEncode(v.data(), n, 1, enc.data()));
  EXPECT_EQ(enc.size(), kFloatCodecHeaderBytes + 1 + n);
  EXPECT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes]), 0) << "expected a raw plane";
  ExpectRoundTrip(v, "misleading sample");
}

TEST(FloatCodecTest, TwoSymbolsALookupRoundTripAtEveryStreamEnd) {
  // Four-stream planes (codec version 1's layout) of at least 16384 symbols whose code is short (an exponent plane,
  // smooth FP8) are decoded two symbols a lookup, the four streams advancing apart, then symbol by symbol near their
  // ends: every remainder of the four streams, and codes short enough that nearly every lookup holds two symbols
  // (three bytes, lengths 1, 2, 2). Version 2 codes the same planes in eight streams, one symbol a lookup: the same
  // sizes cover every remainder of those, and FP8 E4M3-like bytes (codes too long for pairs) both layouts.
  std::mt19937 rng(13);
  for (size_t n = 16384; n < 16384 + 40; ++n) {
    const std::vector<float> g = Gaussian(n, static_cast<uint32_t>(n));
    std::vector<uint16_t> bf16(n);
    for (size_t i = 0; i < n; ++i) bf16[i] = kernels::FloatToBf16(g[i]);
    std::vector<uint8_t> three(n), wide(n);
    for (uint8_t& x : three) x = Fp8WithTopByte(static_cast<uint8_t>(rng() % 3));
    for (uint8_t& x : wide) x = WideCodeByte(rng);
    for (int version : {1, 2, 3}) {
      const std::string at = " n=" + std::to_string(n) + " version " + std::to_string(version);
      ExpectRoundTrip(bf16, "BF16 Gaussian" + at, version);
      ExpectRoundTrip(three, "three bytes" + at, version);
      ExpectRoundTrip(wide, "wide code" + at, version);
    }
  }
  for (size_t n : {size_t{65535}, size_t{65536} + 16389, size_t{3} << 16}) {
    const std::vector<float> g = Gaussian(n, static_cast<uint32_t>(n));
    std::vector<uint16_t> bf16(n);
    for (size_t i = 0; i < n; ++i) bf16[i] = kernels::FloatToBf16(g[i]);
    for (int version : {1, 2, 3}) ExpectRoundTrip(bf16, "BF16 Gaussian n=" + std::to_string(n), version);
  }
}

TEST(FloatCodecTest, ThreeSymbolsALookupRoundTripAtEveryStreamEnd) {
  // A plane whose code is mostly one 1-bit code (a byte in nine of ten) is decoded up to three symbols a lookup, each
  // lookup storing four bytes: a round (four lookups a stream) runs only while every stream has at least 13 symbols
  // left a round. Stream lengths ceil(n / 4) over every remainder of 12 and more (one round more, or a store one byte
  // further, writes over the next stream's first symbols, or past the block's scratch at 2^16), in FP8 and in both
  // planes of FP16 (a constant walk: delta planes).
  std::mt19937 rng(27);
  for (size_t n = 16384; n < 16384 + 100; ++n) {
    std::vector<uint8_t> fp8(n);
    for (uint8_t& x : fp8) x = Fp8WithTopByte(static_cast<uint8_t>(rng() % 10 ? 7 : rng() % 6));
    std::vector<uint16_t> fp16(n);
    uint16_t at = 0x3c00;
    for (uint16_t& x : fp16) x = at = static_cast<uint16_t>(at + (rng() % 10 ? 0 : rng() % 5 - 2));
    const std::string where = " n=" + std::to_string(n);
    for (int version : {1, 3}) ExpectRoundTrip(fp8, "FP8 one byte in nine of ten" + where, version);
    ExpectRoundTrip(fp16, "FP16 walk" + where);
  }
  for (size_t n : {size_t{65536}, size_t{65536} * 2 - 1}) {
    std::vector<uint8_t> fp8(n);
    for (uint8_t& x : fp8) x = Fp8WithTopByte(static_cast<uint8_t>(rng() % 10 ? 7 : rng() % 6));
    ExpectRoundTrip(fp8, "FP8 one byte in nine of ten n=" + std::to_string(n));
  }
}

// Each plane's mode byte, block after block (defined below).
std::vector<uint8_t> PlaneModes(const std::string& enc, size_t n, size_t e);

// The planes' modes of a one-block payload (FP8: one plane).
uint8_t FirstPlaneMode(const std::string& enc) { return static_cast<uint8_t>(enc[kFloatCodecHeaderBytes]); }

TEST(FloatCodecTest, MultiSymbolStreamsThatRunApartEndAlone) {
  // The four streams of a multi-symbol plane advance by their own symbols a lookup, so the first to near its end stops
  // the rounds of four streams with the others' symbols left, and each of those goes on alone (codec31) to its last
  // 13 symbols or 8 bytes. One quarter of the plane (one stream) differs from the other three, first, second, third
  // or last: one byte 95% of the time against 10% (2-bit code, three symbols a lookup, against 5 and 6-bit codes for
  // the 30 others: the three slower streams go on alone to their last 8 bytes), or 64 rare bytes against 4 common
  // ones (8-bit codes, one symbol a lookup, against 2 and 3-bit codes: the slow stream goes on alone for two thirds of
  // its symbols, to its last 13 symbols), at stream lengths over every remainder of a round (12 symbols) and the
  // block's limits. A stream going on past its end writes over the next one's first symbols, or past the block.
  std::mt19937 rng(31);
  auto byte = [&rng](bool odd, bool rare) -> uint8_t {
    if (!rare) return static_cast<uint8_t>(rng() % 100 < (odd ? 95u : 10u) ? 0x40 : 0x50 + rng() % 30);
    return static_cast<uint8_t>(odd ? 0x80 + rng() % 64 : 0x40 + rng() % 4);
  };
  for (bool rare : {false, true}) {
    for (int odd = 0; odd < 4; ++odd) {
      std::vector<size_t> sizes = {65536, 65536 * 2 - 1};
      for (size_t n = 16384; n < 16384 + 4 * 13; n += 3) sizes.push_back(n);
      for (size_t n : sizes) {
        std::vector<uint8_t> v(n);
        const size_t quarter = (std::min<size_t>(n, 65536) + 3) / 4;
        for (size_t i = 0; i < n; ++i)
          v[i] = Fp8WithTopByte(byte((i % 65536) / quarter == static_cast<size_t>(odd), rare));
        const std::string at = std::string(rare ? " rare" : " skewed") + " stream " + std::to_string(odd) +
                               " n=" + std::to_string(n);
        for (int version : {1, 3}) ExpectRoundTrip(v, "FP8, one stream apart" + at, version);
        EXPECT_EQ(FirstPlaneMode(Encode(v.data(), n, 1)), 2) << at;  // Huffman, four streams
      }
    }
  }
}

// Plane sizes for the four-stream coders' rounds: 1 to `small` bytes, streams over every remainder of a 16-byte
// round (10,000 + 3k), around the exact histogram's limit, and the largest plane version 3 still codes in four
// streams whatever its code.
std::vector<size_t> FourStreamSizes(size_t small) {
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= small; ++n) sizes.push_back(n);
  for (size_t n = 10000; n < 10000 + 4 * 17; n += 3) sizes.push_back(n);
  for (size_t n : {4095, 4096, 4097, 16383}) sizes.push_back(n);
  return sizes;
}

TEST(FloatCodecTest, NarrowPlanesRoundTripCodedTwoBytesALookup) {
  // A four-stream plane whose bytes lie in 16 consecutive values is coded a pair of neighbours a lookup (codec30), 8,
  // 6, 4, 3 or 2 pairs between 8-byte stores by its longest code (at most 3, 4, 6, 8, 12 bits), the rest of each stream
  // byte by byte. FP8 planes of 2 to 16 values (and 17: byte by byte) at both ends of the byte range, with codes
  // from 1 to 12 bits long (q: each value 1/q times as likely as the next; q 1: all alike), at stream lengths over
  // every remainder of a round (16 bytes) and the exact histogram's limit; fewer than 16384 bytes, so version 3 codes
  // them in four streams too (as values: a plane of independent draws is not coded as differences).
  std::mt19937 rng(30);
  const std::vector<size_t> sizes = FourStreamSizes(40);
  for (int width : {2, 3, 5, 7, 9, 16, 17}) {
    for (int lo : {0, 0x7a, 256 - width}) {
      for (double q : {1.0, 2.0}) {
        std::vector<double> weight(static_cast<size_t>(width));
        for (int k = 0; k < width; ++k) weight[static_cast<size_t>(k)] = std::pow(q, -k);
        std::discrete_distribution<int> pick(weight.begin(), weight.end());
        for (size_t n : sizes) {
          std::vector<uint8_t> v(n);
          for (uint8_t& x : v) x = Fp8WithTopByte(static_cast<uint8_t>(lo + pick(rng)));
          const std::string at = " width " + std::to_string(width) + " from " + std::to_string(lo) + " q " +
                                 std::to_string(q) + " n=" + std::to_string(n);
          for (int version : {1, 3}) ExpectRoundTrip(v, "narrow FP8" + at, version);
          if (n == 10000) EXPECT_EQ(FirstPlaneMode(Encode(v.data(), n, 1)), 2) << at;  // Huffman, four streams
        }
      }
    }
  }
}

TEST(FloatCodecTest, PlanesOfMostlyTwoBytesRoundTripCodedSixteenBytesTwoLookups) {
  // A four-stream plane that is mostly two bytes (at least 24/25 of its sample) with codes of at most 3 bits is
  // coded 16 bytes at a time where all 16 are one of the two (codec32): two lookups in a table of runs of 8, one
  // 8-byte store after both; 16 bytes holding another byte one by one. FP8 planes of two bytes (next to each
  // other, 128 apart, at both ends of the byte range) and rare others of any value, with codes of 1 to 3 bits for
  // the two, at stream lengths over every remainder of a round (16 bytes), around the exact histogram's limit and
  // in a block and a half (version 1: four streams at any size), there also with whole rounds of the rarer byte.
  std::mt19937 rng(32);
  const std::vector<size_t> sizes = FourStreamSizes(80);
  struct Mix {
    double a, b, other;  // shares of byte a, byte b and any byte
  };
  const Mix mixes[] = {{0.5, 0.5, 0}, {0.75, 0.25, 0.002}, {0.8, 0.18, 0.02}, {0.9, 0.07, 0.03}, {0.97, 0.02, 0.01}};
  for (const auto& [a, b] : {std::pair<int, int>{0x00, 0x01}, {0x00, 0x80}, {0xff, 0xfe}, {0x7c, 0x7b}}) {
    for (const Mix& mix : mixes) {
      std::discrete_distribution<int> pick({mix.a, mix.b, mix.other});
      const std::string at = " bytes " + std::to_string(a) + " " + std::to_string(b) + " a " + std::to_string(mix.a);
      auto fill = [&](std::vector<uint8_t>* v) {
        for (uint8_t& x : *v) {
          const int k = pick(rng);
          x = Fp8WithTopByte(static_cast<uint8_t>(k == 0 ? a : k == 1 ? b : static_cast<int>(rng() % 256)));
        }
      };
      for (size_t n : sizes) {
        std::vector<uint8_t> v(n);
        fill(&v);
        for (int version : {1, 3}) ExpectRoundTrip(v, "two bytes" + at + " n=" + std::to_string(n), version);
        if (n == 10000) EXPECT_EQ(FirstPlaneMode(Encode(v.data(), n, 1)), 2) << at;  // Huffman, four streams
      }
      std::vector<uint8_t> v((size_t{3} << 16) / 2 + 5);
      fill(&v);
      ExpectRoundTrip(v, "two bytes, a block and a half" + at, 1);
      // Rounds of b alone (16 of its codes between two stores): 40 b in a row every 2,048 bytes, at every offset
      // from a round's start.
      const uint8_t fp8_b = Fp8WithTopByte(static_cast<uint8_t>(b));
      for (size_t k = 0; k + 2048 <= v.size(); k += 2048)
        std::fill_n(v.begin() + static_cast<ptrdiff_t>(k + k / 2048 % 17), 40, fp8_b);
      ExpectRoundTrip(v, "two bytes, rounds of the rarer one" + at, 1);
    }
  }
  // A second byte whose code is 4 bits is not coded by runs: a round of 16 of them would not fit the 48 bits
  // between two stores. 4,096 bytes (an exact histogram): 0x00 but for a round of 16 of each of 0x01-0x08 (a 1-bit
  // code, eight 4-bit codes; the two most common bytes 97% of the plane).
  std::vector<uint8_t> v(4096, Fp8WithTopByte(0));
  for (int k = 1; k <= 8; ++k)
    std::fill_n(v.begin() + 400 * k / 16 * 16, 16, Fp8WithTopByte(static_cast<uint8_t>(k)));
  ExpectRoundTrip(v, "a second byte of a 4-bit code", 1);
}

TEST(FloatCodecTest, EveryWindowOfTheMultiSymbolTableIsRebuiltForEachBlock) {
  // The multi-symbol table is built for each block's code over the last one's: a window whose second code does not
  // fit (an 8-bit code followed by another: one window in 16 here) must get its one symbol again, else it decodes
  // with the first block's entry (a block of 16 equally likely bytes: three 4-bit codes a window). Both blocks'
  // planes are four-stream Huffman planes decoded several symbols a lookup.
  std::mt19937 rng(28);
  const size_t block = size_t{1} << 16;
  std::vector<uint8_t> v(2 * block);
  for (size_t i = 0; i < block; ++i) v[i] = Fp8WithTopByte(static_cast<uint8_t>(0x40 + rng() % 16));
  for (size_t i = block; i < 2 * block; ++i) {
    const uint32_t r = rng() % 4;  // 0x80 half the time, 0x81 a quarter, 64 bytes sharing the last quarter
    v[i] = Fp8WithTopByte(static_cast<uint8_t>(r < 2 ? 0x80 : r == 2 ? 0x81 : 0x90 + rng() % 64));
  }
  const std::string enc = Encode(v.data(), v.size(), 1);
  const std::vector<uint8_t> modes = PlaneModes(enc, v.size(), 1);
  ASSERT_EQ(modes.size(), 2u);
  EXPECT_EQ(modes[0], 2);
  EXPECT_EQ(modes[1], 2);
  ExpectRoundTrip(v, "16 bytes, then 2 + 64");
}

TEST(FloatCodecTest, EncoderCodesLargePlanesInEightStreams) {
  // Version 2 codes a Huffman plane of at least 16384 symbols in eight streams (mode 3) unless 7/8 of its code's
  // windows hold two codes, smaller ones in four (mode 2); FloatEncodeVersion1 never in eight, and its output
  // carries version 1.
  std::mt19937 rng(16);
  {
    // Gaussian BF16's exponents (~2.6 bits a symbol): two codes in most windows, four streams at any size.
    const std::vector<float> g = Gaussian(1 << 16, 17);
    std::vector<uint16_t> bf16(g.size());
    for (size_t i = 0; i < g.size(); ++i) bf16[i] = kernels::FloatToBf16(g[i]);
    const std::string enc = Encode(bf16.data(), bf16.size(), 2);
    ASSERT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes]), 0);
    EXPECT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes + 1 + (1 << 16)]), 2);
    // Three bytes of lengths 1, 2, 2: every window holds two codes or more.
    std::vector<uint8_t> three(1 << 16);
    for (uint8_t& x : three) x = Fp8WithTopByte(static_cast<uint8_t>(rng() % 3));
    EXPECT_EQ(FirstPlaneMode(Encode(three.data(), three.size(), 1)), 2);
  }
  for (size_t n : {size_t{16383}, size_t{16384}}) {
    std::vector<uint8_t> v(n);
    for (uint8_t& x : v) x = WideCodeByte(rng);
    const std::string v2 = Encode(v.data(), n, 1, 2), v1 = Encode(v.data(), n, 1, 1), v3 = Encode(v.data(), n, 1);
    EXPECT_EQ(v2[0], 2);
    EXPECT_EQ(v1[0], 1);
    EXPECT_EQ(v3[0], 3);
    EXPECT_EQ(FirstPlaneMode(v2), n >= 16384 ? 3 : 2) << n;
    EXPECT_EQ(v3.substr(1), v2.substr(1)) << n << ": no delta plane here, so version 3 writes version 2's planes";
    EXPECT_EQ(FirstPlaneMode(v1), 2) << n;
    // Four more stream sizes in the header, the streams' padding: within 20 bytes of each other.
    EXPECT_LE(v2.size(), v1.size() + (n >= 16384 ? 20 : 0)) << n;
    EXPECT_GE(v2.size() + 1, v1.size()) << n;
  }
}

TEST(FloatCodecTest, PlanesWhoseNeighboursRepeatKeepFourStreams) {
  // Eight interleaved streams hide a plane's local repeats from a compressor over the coded bytes (the writer's zstd
  // trial), so the encoder keeps four streams of consecutive elements where sampled neighbours are equal more than
  // twice as often as independent draws would be (Σ p² of the plane's histogram). Model: each element repeats the
  // one before with probability q, else is a fresh WideCodeByte, so the marginal histogram is the same and
  // neighbours are equal at rate q + (1 - q) Σ p²; set to 1.25 Σ p² it must keep eight streams (mildly correlated
  // data is not smooth data), at 3 Σ p² four. A threshold 2x looser (4 Σ p²) or tighter (1 Σ p²) fails one side.
  std::mt19937 rng(25);
  const size_t n = 1 << 16;
  double sum_sq = 0;  // Σ p² of WideCodeByte: the sum of two uniform draws of 0..95
  for (int v = 0; v <= 190; ++v) {
    const double p = (96.0 - std::abs(v - 95)) / (96.0 * 96.0);
    sum_sq += p * p;
  }
  for (const double times : {1.25, 3.0}) {
    const double q = (times - 1) * sum_sq / (1 - sum_sq);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = i > 0 && u(rng) < q ? v[i - 1] : WideCodeByte(rng);
    size_t equal = 0;
    for (size_t i = 1; i < n; ++i) equal += v[i] == v[i - 1];
    const std::string enc = Encode(v.data(), n, 1);
    EXPECT_EQ(FirstPlaneMode(enc), times < 2 ? 3 : 2)
        << times << " x sum p^2 = " << sum_sq << "; neighbours equal " << double(equal) / (n - 1);
    ExpectRoundTrip(v, "FP8 neighbours equal at " + std::to_string(times) + " x sum p^2", 2);
  }
  // A random walk over the plane's bytes (smooth data): four streams, also where its code is long (version 2);
  // version 3 codes its differences (mode 4, four streams).
  std::vector<uint8_t> walk(n);
  int at = 0x80;
  for (uint8_t& x : walk) x = Fp8WithTopByte(static_cast<uint8_t>(at = std::clamp(at + static_cast<int>(rng() % 5) - 2, 0x20, 0xdf)));
  EXPECT_EQ(FirstPlaneMode(Encode(walk.data(), n, 1, 2)), 2);
  EXPECT_EQ(FirstPlaneMode(Encode(walk.data(), n, 1)), 4);
}

// The start of an FP8 payload, version 2, of one block of `count` elements whose plane is coded in eight streams
// (mode 3) over the symbols first..last; the code lengths follow.
std::string EightStreamFp8Start(uint64_t count, uint8_t first, uint8_t last) {
  std::string enc(kFloatCodecHeaderBytes, '\0');
  enc[0] = 2, enc[1] = 1, enc[2] = 16;
  memcpy(enc.data() + 8, &count, 8);
  enc += static_cast<char>(3);
  enc += static_cast<char>(first);
  enc += static_cast<char>(last);
  return enc;
}

// An FP8 payload, version 2, of one block whose plane is coded in eight streams by hand with the two-symbol code
// {lo: 0, lo + 1: 1} (one bit a symbol): stream s holds symbols s, s + 8, ..., symbol j of a stream in bit j
// (LSB first). Returns the payload; `want` gets the elements.
std::string HandWideFp8(size_t n, uint32_t seed, std::vector<uint8_t>* want) {
  constexpr uint8_t lo = 0x42;
  std::mt19937 rng(seed);
  std::vector<uint8_t> sym(n);
  for (uint8_t& x : sym) x = static_cast<uint8_t>(lo + rng() % 2);
  want->resize(n);
  for (size_t i = 0; i < n; ++i) (*want)[i] = Fp8WithTopByte(sym[i]);
  std::string enc = EightStreamFp8Start(n, lo, lo + 1);
  enc += static_cast<char>(0x11);  // both lengths 1
  std::string streams[8];
  for (int s = 0; s < 8; ++s) {
    size_t j = 0;
    for (size_t i = static_cast<size_t>(s); i < n; i += 8, ++j) {
      if (j % 8 == 0) streams[s] += '\0';
      streams[s].back() = static_cast<char>(streams[s].back() | (sym[i] - lo) << (j % 8));
    }
    const uint32_t bytes = static_cast<uint32_t>(streams[s].size());
    enc.append(reinterpret_cast<const char*>(&bytes), 4);
  }
  for (const std::string& st : streams) enc += st;
  return enc;
}

TEST(FloatCodecTest, EightStreamPlanesDecodeAtEveryStreamSplit) {
  // The eight-stream layout at sizes around its splits (0..80 symbols: empty streams, streams one symbol apart, the
  // fast path's 32-symbol rounds, its room checks) and around 16384 and 65536; built by hand, so the decoder's
  // reading of the layout is checked against the specification in docs/format.md, not against the encoder.
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 80; ++n) sizes.push_back(n);
  for (size_t n = 16376; n <= 16400; ++n) sizes.push_back(n);
  for (size_t n : {size_t{65535}, size_t{65536}}) sizes.push_back(n);
  for (size_t n : sizes) {
    std::vector<uint8_t> want, back(n, 0xa5);
    const std::string enc = HandWideFp8(n, static_cast<uint32_t>(n), &want);
    const char* err = FloatDecode(enc.data(), enc.size(), 1, back.data(), n);
    if (n == 0) {  // no elements, no block: the plane is bytes after the last block
      EXPECT_STREQ(err, "trailing bytes after the last block");
      continue;
    }
    ASSERT_EQ(err, nullptr) << n << ": " << err;
    ASSERT_TRUE(back == want) << n;
  }
}

TEST(FloatCodecTest, MalformedEightStreamPlanesAreRejected) {
  std::vector<uint8_t> want(100), back(100);
  const std::string enc = HandWideFp8(100, 3, &want);
  ASSERT_EQ(FloatDecode(enc.data(), enc.size(), 1, back.data(), back.size()), nullptr);
  // Version 1 has no eight-stream planes.
  std::string v1 = enc;
  v1[0] = 1;
  EXPECT_STREQ(FloatDecode(v1.data(), v1.size(), 1, back.data(), back.size()),
               "an eight-stream Huffman plane in a version 1 payload");
  // A version past the newest.
  std::string v4 = enc;
  v4[0] = 4;
  EXPECT_STREQ(FloatDecode(v4.data(), v4.size(), 1, back.data(), back.size()), "unknown codec version");
  // A stream one byte longer (and the next one shorter): the first ends with a byte it does not use.
  const size_t sizes = kFloatCodecHeaderBytes + 4;
  std::string moved = enc;
  moved[sizes] = static_cast<char>(moved[sizes] + 1);
  moved[sizes + 4] = static_cast<char>(moved[sizes + 4] - 1);
  EXPECT_NE(FloatDecode(moved.data(), moved.size(), 1, back.data(), back.size()), nullptr);
  // The last stream's size one past the payload.
  std::string past = enc;
  past[sizes + 28] = static_cast<char>(past[sizes + 28] + 1);
  EXPECT_STREQ(FloatDecode(past.data(), past.size(), 1, back.data(), back.size()), "a Huffman plane runs past the end");
  // The header cut inside the eight stream sizes (only four of them: a version 1 plane's header).
  EXPECT_STREQ(FloatDecode(enc.data(), sizes + 16, 1, back.data(), back.size()),
               "a Huffman plane header runs past the end");
}

// Version 1 payloads written by the version 1 encoder (before codec24; store/testdata/v1_*.fc) of LegacyValues
// (the generator they were written from, kept as it was): BF16 20000 (the top plane decoded two symbols a lookup),
// FP8 5001, FP32 3001, FP64 1001.
template <typename T>
std::vector<T> LegacyValues(size_t n, uint32_t seed, int shift) {
  std::vector<T> v(n);
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = x >> 11;
    int e = 0;  // a skewed top: the count of r's trailing ones picks the exponent
    while (e < 20 && (r >> e & 1)) ++e;
    const uint64_t mant = r >> 24;
    T val = static_cast<T>((static_cast<uint64_t>(60 - e) << shift) | (mant & ((uint64_t{1} << shift) - 1)));
    if (r >> 63 & 1) val = static_cast<T>(val | (uint64_t{1} << (8 * sizeof(T) - 1)));
    v[i] = val;
  }
  return v;
}

std::string ReadFile(const std::string& path) {
  std::string out;
  if (FILE* f = fopen(path.c_str(), "rb")) {
    char buf[4096];
    for (size_t got; (got = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, got);
    fclose(f);
  }
  return out;
}

template <typename T>
void ExpectVersionOneFile(const char* name, size_t n, uint32_t seed, int shift) {
  const std::string enc = ReadFile(std::string(TTRACE_CODEC_TESTDATA) + "/" + name);
  ASSERT_FALSE(enc.empty()) << name;
  ASSERT_EQ(enc[0], 1) << name;
  const std::vector<T> want = LegacyValues<T>(n, seed, shift);
  std::vector<T> back(n);
  const char* err = FloatDecode(enc.data(), enc.size(), sizeof(T), back.data(), n * sizeof(T));
  ASSERT_EQ(err, nullptr) << name << ": " << err;
  EXPECT_TRUE(back == want) << name;
  EXPECT_EQ(Encode(want.data(), n, sizeof(T), 1), enc) << name << ": FloatEncodeVersion1 is not version 1's encoder";
  ExpectRoundTrip(want, name);
}

TEST(FloatCodecTest, VersionOnePayloadsStillDecode) {
  ExpectVersionOneFile<uint16_t>("v1_bf16_20000.fc", 20000, 1, 7);
  ExpectVersionOneFile<uint8_t>("v1_fp8_5001.fc", 5001, 2, 3);
  ExpectVersionOneFile<uint32_t>("v1_fp32_3001.fc", 3001, 3, 23);
  ExpectVersionOneFile<uint64_t>("v1_fp64_1001.fc", 1001, 4, 52);
}

// The fuzz seeds of versions 2 and 3 (fuzz/corpus/float_codec/: version 2 written by codec25's encoder, main's
// before codec version 3) decode, and their elements coded again by that version's encoder give the same bytes:
// FloatEncodeVersion2 is the version 2 encoder (what codec_bench's "float codec v2" and trace_size_bench
// --codec-version 2 compare with), and version 3 writes what its seeds hold.
TEST(FloatCodecTest, CorpusSeedsReencodeByteForByte) {
  int seen[4] = {};
  for (const char* name : {"v2_fp16_gaussian_20003.fc", "v2_fp8_gaussian_16391.fc", "v2_fp8_gaussian_20000.fc",
                           "v2_fp8_smooth_20000.fc", "v3_bf16_smooth_20000.fc", "v3_fp16_smooth_20003.fc",
                           "v3_fp32_smooth_3001.fc", "v3_fp8_walk_5000.fc"}) {
    const std::string enc = ReadFile(std::string(TTRACE_CODEC_CORPUS) + "/" + name);
    ASSERT_GE(enc.size(), kFloatCodecHeaderBytes) << name;
    const size_t e = static_cast<uint8_t>(enc[1]);
    uint64_t n;
    memcpy(&n, enc.data() + 8, 8);
    std::vector<uint8_t> elems(n * e);
    ASSERT_EQ(FloatDecode(enc.data(), enc.size(), e, elems.data(), elems.size()), nullptr) << name;
    const int version = enc[0];
    ++seen[version];
    EXPECT_EQ(Encode(elems.data(), n, e, version), enc) << name;
    if (version == 3) {
      const std::vector<uint8_t> modes = PlaneModes(enc, n, e);
      EXPECT_NE(std::find(modes.begin(), modes.end(), 4), modes.end()) << name << ": no delta plane";
    }
  }
  EXPECT_EQ(seen[2], 4);
  EXPECT_EQ(seen[3], 4);
}

// Input bytes placed to end exactly at an unmapped page: a read past them faults.
class GuardedInput {
 public:
  explicit GuardedInput(size_t capacity) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    pages_ = (capacity + page - 1) / page * page;
    map_ = static_cast<uint8_t*>(mmap(nullptr, pages_ + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(map_, MAP_FAILED);
    mprotect(map_ + pages_, page, PROT_NONE);
    total_ = pages_ + page;
  }
  ~GuardedInput() { munmap(map_, total_); }
  const uint8_t* Place(const std::string& bytes) {
    uint8_t* p = map_ + pages_ - bytes.size();
    memcpy(p, bytes.data(), bytes.size());
    return p;
  }

 private:
  uint8_t* map_;
  size_t pages_, total_;
};

// Decodes `enc` into a guarded output; returns the error (nullptr when it decoded) and checks the guards.
const char* GuardedDecode(GuardedInput& in, const std::string& enc, size_t e, size_t out_bytes) {
  std::vector<uint8_t> out(out_bytes + 64, 0xa5);
  const char* err = FloatDecode(in.Place(enc), enc.size(), e, out.data() + 32, out_bytes);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(out[i], 0xa5);
    EXPECT_EQ(out[32 + out_bytes + i], 0xa5);
  }
  return err;
}

TEST(FloatCodecTest, MalformedInputIsRejectedWithinBounds) {
  const std::vector<float> g = Gaussian(3000, 7);
  std::vector<uint16_t> bf16(g.size());
  for (size_t i = 0; i < g.size(); ++i) bf16[i] = kernels::FloatToBf16(g[i]);
  const std::string enc = Encode(bf16.data(), bf16.size(), 2);
  const size_t out_bytes = bf16.size() * 2;
  GuardedInput in(enc.size() + 64);
  ASSERT_EQ(GuardedDecode(in, enc, 2, out_bytes), nullptr);
  // Every proper prefix and one extra byte: rejected.
  for (size_t k = 0; k < enc.size(); ++k) EXPECT_NE(GuardedDecode(in, enc.substr(0, k), 2, out_bytes), nullptr) << k;
  EXPECT_NE(GuardedDecode(in, enc + '\0', 2, out_bytes), nullptr);
  // The caller's element size and count are checked against the header.
  EXPECT_NE(GuardedDecode(in, enc, 4, out_bytes), nullptr);
  EXPECT_NE(GuardedDecode(in, enc, 2, out_bytes - 2), nullptr);
  EXPECT_NE(GuardedDecode(in, enc, 2, out_bytes + 2), nullptr);
  EXPECT_NE(GuardedDecode(in, enc, 3, out_bytes), nullptr);
  // Every byte of the header and plane headers flipped, and random bytes anywhere: rejected or decoded, in bounds.
  // A flip in the header or a plane's mode, range, lengths or stream sizes must be caught; a flip inside a
  // stream or a raw plane may decode to other values (the frame's CRC-32C catches those).
  size_t rejected = 0;
  for (size_t k = 0; k < enc.size(); ++k)
    for (uint8_t bit : {0x01, 0x10, 0x80}) {
      std::string bad = enc;
      bad[k] ^= static_cast<char>(bit);
      const char* err = GuardedDecode(in, bad, 2, out_bytes);
      rejected += err != nullptr;
      // (Byte 2 is the block size's log2: 16 -> 17 still holds these 3000 elements in one block. Byte 0, the version,
      // 3 -> 2: a payload without delta planes is a valid version 2 payload.)
      if (k < kFloatCodecHeaderBytes && !(k == 2 && bit == 0x01) && !(k == 0 && bit == 0x01)) {
        EXPECT_NE(err, nullptr) << "header byte " << k;
      }
    }
  EXPECT_GT(rejected, 3 * kFloatCodecHeaderBytes);
  std::mt19937 rng(8);
  for (int t = 0; t < 20000; ++t) {
    std::string bad = t % 2 ? enc : std::string(rng() % 200 + 16, '\0');
    for (int j = 0; j < 1 + t % 5; ++j) bad[rng() % bad.size()] = static_cast<char>(rng());
    if (t % 2 == 0) {  // a plausible header in front of random bytes
      memcpy(bad.data(), enc.data(), kFloatCodecHeaderBytes);
      for (size_t j = kFloatCodecHeaderBytes; j < bad.size(); ++j) bad[j] = static_cast<char>(rng() % 4 ? rng() % 3 : rng());
    }
    GuardedDecode(in, bad, 2, out_bytes);
  }
}

TEST(FloatCodecTest, MalformedInputOfLargePlanesIsRejectedWithinBounds) {
  // As above, on planes large enough to be decoded two symbols a lookup (20000 BF16 elements: four streams) or in
  // eight streams (20000 FP16 elements, version 2): truncations and corrupted bytes are rejected or decoded with no
  // read past the input or write outside the output.
  for (int fp16 : {0, 1}) {
  const std::vector<float> g = Gaussian(20000, 14);
  std::vector<uint16_t> bf16(g.size());
  for (size_t i = 0; i < g.size(); ++i) bf16[i] = fp16 ? kernels::FloatToHalf(g[i]) : kernels::FloatToBf16(g[i]);
  const std::string enc = Encode(bf16.data(), bf16.size(), 2);
  ASSERT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes]), 0) << "expected a raw low plane";
  ASSERT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes + 20001]), fp16 ? 3 : 2);
  const size_t out_bytes = bf16.size() * 2;
  GuardedInput in(enc.size() + 64);
  ASSERT_EQ(GuardedDecode(in, enc, 2, out_bytes), nullptr);
  std::mt19937 rng(15);
  for (int t = 0; t < 300; ++t) EXPECT_NE(GuardedDecode(in, enc.substr(0, rng() % enc.size()), 2, out_bytes), nullptr);
  for (int t = 0; t < 3000; ++t) {
    std::string bad = enc;
    for (int j = 0; j < 1 + t % 4; ++j) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    GuardedDecode(in, bad, 2, out_bytes);
  }
  }
}

TEST(FloatCodecTest, EightStreamRoundsNeverReadPastTheirStreams) {
  // The eight-stream decoder's fast rounds load 8 bytes at each stream's position and advance it by at most 6 (four
  // codes of at most 12 bits), so it runs a round only while every stream has 8 bytes left at its position. A plane
  // whose every code is 12 bits long advances exactly 6 bytes a round: one round more than the rule allows would
  // load 2 bytes past the last stream, which here is the payload's end and the page before an unmapped one.
  // The code: 13 symbols lo..lo + 12 of lengths 1, 2, ..., 11, 12, 12 (complete); every element is lo + 12, whose
  // canonical code is twelve ones, so each stream is all 0xff. Sizes 8 c: every stream c symbols, 1.5 c bytes.
  constexpr uint8_t lo = 0x30;
  for (size_t n : {size_t{16384}, size_t{16400}, size_t{65536}}) {
    std::string enc = EightStreamFp8Start(n, lo, lo + 12);
    const int len[13] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 12};
    for (int a = 0; a < 13; a += 2) enc += static_cast<char>(len[a] | (a + 1 < 13 ? len[a + 1] << 4 : 0));
    const uint32_t bytes = static_cast<uint32_t>(n / 8 * 12 / 8);
    for (int s = 0; s < 8; ++s) enc.append(reinterpret_cast<const char*>(&bytes), 4);
    enc.append(8 * bytes, static_cast<char>(0xff));
    GuardedInput in(enc.size());
    std::vector<uint8_t> out(n);
    ASSERT_EQ(FloatDecode(in.Place(enc), enc.size(), 1, out.data(), n), nullptr) << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], Fp8WithTopByte(lo + 12)) << n << " " << i;
  }
}

TEST(FloatCodecTest, BlocksOfAnotherSizeDecode) {
  // The decoder composes elements in a scratch buffer of the encoder's block size (2^16); a stream written with
  // larger blocks (the header allows up to 2^24) goes through the general path, smaller ones through the fast one.
  // A BF16 stream by hand: raw low plane, constant top plane (0x7e: exponent 126), in blocks of 2^17 and 2^8.
  for (int block_log2 : {17, 8}) {
    const size_t n = 70001, block = size_t{1} << block_log2;
    std::string enc(kFloatCodecHeaderBytes, '\0');
    enc[0] = 1, enc[1] = 2, enc[2] = static_cast<char>(block_log2);
    const uint64_t count = n;
    memcpy(enc.data() + 8, &count, 8);
    std::vector<uint16_t> want(n);
    std::mt19937 rng(9);
    for (size_t b = 0; b < n; b += block) {
      enc += static_cast<char>(0);  // raw
      for (size_t i = b; i < std::min(n, b + block); ++i) {
        const uint8_t low = static_cast<uint8_t>(rng());
        enc += static_cast<char>(low);
        const uint16_t r = static_cast<uint16_t>(0x7e00 | low);
        want[i] = static_cast<uint16_t>((r >> 1) | (r << 15));
      }
      enc += static_cast<char>(1);  // constant
      enc += static_cast<char>(0x7e);
    }
    std::vector<uint16_t> back(n);
    ASSERT_EQ(FloatDecode(enc.data(), enc.size(), 2, back.data(), n * 2), nullptr) << block_log2;
    EXPECT_TRUE(back == want) << block_log2;
  }
}

TEST(FloatCodecTest, AnIncompleteHuffmanCodeIsRejected) {
  // Two blocks' worth of two symbols: a Huffman plane with lengths {1, 1}; then one length raised to 2 (Kraft sum
  // 3/4, some windows decode to nothing) must be refused, not decoded as garbage.
  std::vector<uint8_t> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 3 ? 0x00 : 0x80;  // rotated: 0x00 and 0x01
  std::string enc = Encode(v.data(), v.size(), 1);
  ASSERT_EQ(static_cast<uint8_t>(enc[kFloatCodecHeaderBytes]), 2) << "expected a Huffman plane";
  std::vector<uint8_t> back(v.size());
  ASSERT_EQ(FloatDecode(enc.data(), enc.size(), 1, back.data(), back.size()), nullptr);
  EXPECT_EQ(back, v);
  const size_t lengths = kFloatCodecHeaderBytes + 3;
  ASSERT_EQ(static_cast<uint8_t>(enc[lengths]), 0x11);
  enc[lengths] = 0x21;
  EXPECT_STREQ(FloatDecode(enc.data(), enc.size(), 1, back.data(), back.size()), "a Huffman code is not complete");
}


// ---- delta planes (codec version 3) -------------------------------------------------------------------------------

// The mode of every plane of every block of a payload of n elements of e bytes (block after block, plane 0 first),
// read by the layout of docs/format.md.
std::vector<uint8_t> PlaneModes(const std::string& enc, size_t n, size_t e) {
  std::vector<uint8_t> modes;
  const auto* p = reinterpret_cast<const uint8_t*>(enc.data());
  const size_t block = size_t{1} << p[2];
  size_t pos = kFloatCodecHeaderBytes;
  for (size_t b = 0; b < n; b += block) {
    const size_t m = std::min(block, n - b);
    for (size_t plane = 0; plane < e; ++plane) {
      const uint8_t mode = p[pos++];
      modes.push_back(mode);
      if (mode == 0) {
        pos += m;
      } else if (mode == 1) {
        ++pos;
      } else {
        if (mode == 4) ++pos;
        const int lo = p[pos], hi = p[pos + 1];
        pos += 2 + static_cast<size_t>(hi - lo + 2) / 2;
        const int streams = mode == 3 ? 8 : 4;
        size_t bytes = 0;
        for (int s = 0; s < streams; ++s) bytes += Load32At(p + pos + 4 * s);
        pos += 4 * static_cast<size_t>(streams) + bytes;
      }
    }
  }
  EXPECT_EQ(pos, enc.size());
  return modes;
}

// A random walk (codec_bench's "smooth" row: activations): n steps N(0, step) from `start`.
std::vector<float> Walk(size_t n, uint32_t seed, float start, float step) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, step);
  std::vector<float> v(n);
  float x = start;
  for (float& y : v) y = x += d(rng);
  return v;
}

TEST(FloatCodecTest, SmoothPlanesAreCodedAsDifferences) {
  // A random walk rounded to BF16 (steps 0.01 at ~20, where BF16's unit is 0.125: ~94% of neighbours equal) or FP16
  // (unit 0.0156: neighbours a unit or two apart): the low plane's differences cluster at 0, so version 3 codes it
  // as differences (mode 4) in every block, where version 2 coded its values or stored it raw; the top plane
  // (BF16: the exponent, constant between powers of two; FP16: carries move it by one) is constant or coded as
  // differences. FP32 (units of 2^-19 at ~20: the walk's steps span ~2^13 of them): the two low planes are noise
  // (plane 0 holds the sign bit, always 0 here: 7 bits of noise, coded as values) and are not coded as
  // differences; plane 2 is, the top one too or is constant.
  const size_t n = size_t{1} << 18;
  const std::vector<float> w = Walk(n, 30, 20.0f, 0.01f);
  std::vector<uint16_t> bf16(n), fp16(n);
  std::vector<uint32_t> fp32(n);
  for (size_t i = 0; i < n; ++i) {
    bf16[i] = kernels::FloatToBf16(w[i]);
    fp16[i] = kernels::FloatToHalf(w[i]);
    memcpy(&fp32[i], &w[i], 4);
  }
  auto expect_modes = [](const std::vector<uint8_t>& modes, size_t e, const char* what) {
    for (size_t k = 0; k < modes.size(); ++k) {
      const size_t plane = k % e;
      if (plane + 1 == e)
        EXPECT_TRUE(modes[k] == 4 || modes[k] == 1) << what << " top plane, block " << k / e << ": " << int{modes[k]};
      else if (plane + 2 < e)
        EXPECT_NE(modes[k], 4) << what << " plane " << plane << ", block " << k / e;
      else
        EXPECT_EQ(modes[k], 4) << what << " plane " << plane << ", block " << k / e;
    }
  };
  expect_modes(PlaneModes(Encode(bf16.data(), n, 2), n, 2), 2, "BF16");
  expect_modes(PlaneModes(Encode(fp16.data(), n, 2), n, 2), 2, "FP16");
  expect_modes(PlaneModes(Encode(fp32.data(), n, 4), n, 4), 4, "FP32");
  ExpectRoundTrip(bf16, "smooth BF16");
  ExpectRoundTrip(fp16, "smooth FP16");
  ExpectRoundTrip(fp32, "smooth FP32");
  const double bf16_v2 = static_cast<double>(n * 2) / static_cast<double>(Encode(bf16.data(), n, 2, 2).size());
  const double fp16_v2 = static_cast<double>(n * 2) / static_cast<double>(Encode(fp16.data(), n, 2, 2).size());
  const double fp32_v2 = static_cast<double>(n * 4) / static_cast<double>(Encode(fp32.data(), n, 4, 2).size());
  RecordProperty("ratios", std::to_string(Ratio(bf16)) + " " + std::to_string(bf16_v2) + " " + std::to_string(Ratio(fp16)) +
                               " " + std::to_string(fp16_v2) + " " + std::to_string(Ratio(fp32)) + " " + std::to_string(fp32_v2));
  // A Huffman code takes at least a bit a symbol: BF16 with a constant top plane at most 16x. ~94% of the BF16 low
  // plane's differences are 0 (1 bit), the rest +-1 unit (3 bits or so): ~1.1 bits a low plane byte.
  EXPECT_GE(Ratio(bf16), 2.5 * bf16_v2);
  EXPECT_LE(Ratio(bf16), 16.0);
  EXPECT_GE(Ratio(fp16), 1.5 * fp16_v2);
  EXPECT_GE(Ratio(fp32), 1.1 * fp32_v2);
  // Independent values (Gaussian weights) have no plane coded as differences.
  const std::vector<float> g = Gaussian(n, 31);
  std::vector<uint16_t> gb(n);
  for (size_t i = 0; i < n; ++i) gb[i] = kernels::FloatToBf16(g[i]);
  const std::string genc = Encode(gb.data(), n, 2);
  for (uint8_t mode : PlaneModes(genc, n, 2)) EXPECT_NE(mode, 4) << "Gaussian BF16";
  EXPECT_EQ(genc.substr(1), Encode(gb.data(), n, 2, 2).substr(1)) << "Gaussian BF16: version 3 writes version 2's planes";
}

TEST(FloatCodecTest, DifferencesAreCodedWhereTheirEntropyIsAtMostSevenEighths) {
  // The rule: a plane is coded as differences when the sampled differences' entropy is at most 7/8 of its bytes'.
  // Model: a walk on K plane bytes lo..lo + K - 1, wrapping, steps -1, 0, +1 equally likely. The bytes are uniform
  // (log2 K bits); the differences are 0, +-1 and, at a wrap, -+(K - 1): K = 8: 1.94 against 3 bits (0.65: coded
  // as differences); K = 3: 2.2 against 1.58 (1.39: not). A rule 2x looser (7/4) takes K = 3, one 2x tighter (7/16)
  // misses K = 8.
  std::mt19937 rng(32);
  const size_t n = size_t{1} << 16;
  for (int k : {3, 8}) {
    std::vector<uint8_t> v(n);
    int at = 0;
    for (uint8_t& x : v) {
      at = (at + k + static_cast<int>(rng() % 3) - 1) % k;
      x = Fp8WithTopByte(static_cast<uint8_t>(0x40 + at));
    }
    EXPECT_EQ(FirstPlaneMode(Encode(v.data(), n, 1)), k == 8 ? 4 : 2) << "K = " << k;
    ExpectRoundTrip(v, "walk on " + std::to_string(k) + " bytes");
    if (k == 8) EXPECT_LT(Encode(v.data(), n, 1).size(), Encode(v.data(), n, 1, 2).size() * 3 / 4);
  }
}

TEST(FloatCodecTest, DeltaPlanesRoundTripAtEveryBoundary) {
  // Smooth data of every element size at sizes around the prefix sum's 16-byte vectors, the pair decoder's and the
  // four streams' ends, and blocks; walks that cross zero (the sign bit flips in plane 0) and wrap plane bytes.
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 70; ++n) sizes.push_back(n);
  for (size_t n : {16383, 16384, 16385, 16399, 65535, 65536, 65537, 65536 + 17, 200003}) sizes.push_back(n);
  for (size_t n : sizes) {
    const std::vector<float> w = Walk(n, static_cast<uint32_t>(n), n % 2 ? 0.05f : 3.0f, n % 3 ? 0.01f : 0.001f);
    std::vector<uint16_t> bf16(n), fp16(n);
    std::vector<uint32_t> fp32(n);
    std::vector<uint64_t> fp64(n);
    std::vector<uint8_t> e4m3(n);
    for (size_t i = 0; i < n; ++i) {
      bf16[i] = kernels::FloatToBf16(w[i]);
      fp16[i] = kernels::FloatToHalf(w[i]);
      memcpy(&fp32[i], &w[i], 4);
      const double d = w[i];
      memcpy(&fp64[i], &d, 8);
      e4m3[i] = kernels::FloatToE4M3(w[i] * 20);
    }
    const std::string at = " n=" + std::to_string(n);
    ExpectRoundTrip(bf16, "smooth BF16" + at);
    ExpectRoundTrip(fp16, "smooth FP16" + at);
    ExpectRoundTrip(fp32, "smooth FP32" + at);
    ExpectRoundTrip(fp64, "smooth FP64" + at);
    ExpectRoundTrip(e4m3, "smooth E4M3" + at);
  }
  // Every plane of FP64 elements counting up by 0x0101...01 codes as differences: eight planes not raw, which the
  // decoder composes in the output (its general path), not in four scratch planes.
  for (size_t n : {size_t{100}, size_t{65536 + 5}}) {
    std::vector<uint64_t> ramp(n);
    for (size_t i = 0; i < n; ++i) ramp[i] = 0x0101010101010101ull * (i + 7);
    const std::string enc = Encode(ramp.data(), n, 8);
    const std::vector<uint8_t> modes = PlaneModes(enc, n, 8);
    EXPECT_EQ(std::count(modes.begin(), modes.begin() + 8, 4), 8) << n;
    ExpectRoundTrip(ramp, "FP64 ramp n=" + std::to_string(n));
  }
}

// An FP8 payload, version 3, of one block of 2^block_log2 or more elements (n) whose plane is coded by hand as
// differences (mode 4) with the two-symbol code {0x80: 0, 0x81: 1} over four streams of consecutive elements:
// plane byte i is first + (the number of ones among bits 0..i) mod 256. `want` gets the elements.
std::string HandDeltaFp8(size_t n, int block_log2, uint8_t first, uint32_t seed, std::vector<uint8_t>* want) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bit(n);
  for (uint8_t& b : bit) b = static_cast<uint8_t>(rng() % 4 == 0);
  want->resize(n);
  uint8_t s = first;
  for (size_t i = 0; i < n; ++i) (*want)[i] = Fp8WithTopByte(s = static_cast<uint8_t>(s + bit[i]));
  std::string enc(kFloatCodecHeaderBytes, '\0');
  enc[0] = 3, enc[1] = 1, enc[2] = static_cast<char>(block_log2);
  const uint64_t count = n;
  memcpy(enc.data() + 8, &count, 8);
  enc += static_cast<char>(4);
  enc += static_cast<char>(first);
  enc += static_cast<char>(0x80);
  enc += static_cast<char>(0x81);
  enc += static_cast<char>(0x11);  // both lengths 1
  const size_t q = (n + 3) / 4;
  std::string streams[4];
  for (size_t s4 = 0; s4 < 4; ++s4) {
    for (size_t i = std::min(n, s4 * q), j = 0; i < std::min(n, (s4 + 1) * q); ++i, ++j) {
      if (j % 8 == 0) streams[s4] += '\0';
      streams[s4].back() = static_cast<char>(streams[s4].back() | bit[i] << (j % 8));
    }
    const uint32_t bytes = static_cast<uint32_t>(streams[s4].size());
    enc.append(reinterpret_cast<const char*>(&bytes), 4);
  }
  for (const std::string& st : streams) enc += st;
  return enc;
}

TEST(FloatCodecTest, HandMadeDeltaPlanesDecode) {
  // Built by hand from docs/format.md's mode 4, so the decoder is checked against the specification, not against
  // the encoder: sizes around the prefix sum's vectors and the four streams' splits, a block past the decoder's
  // scratch size (2^17: its general path), and a first byte near 0xff so the sums wrap.
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 70; ++n) sizes.push_back(n);
  for (size_t n : {16384, 16401, 65536}) sizes.push_back(n);
  for (size_t n : sizes) {
    std::vector<uint8_t> want, back(n, 0xa5);
    const std::string enc = HandDeltaFp8(n, 16, 0xf9, static_cast<uint32_t>(n), &want);
    const char* err = FloatDecode(enc.data(), enc.size(), 1, back.data(), n);
    ASSERT_EQ(err, nullptr) << n << ": " << err;
    ASSERT_TRUE(back == want) << n;
  }
  std::vector<uint8_t> want, back(70001);
  const std::string big = HandDeltaFp8(70001, 17, 0x10, 5, &want);
  ASSERT_EQ(FloatDecode(big.data(), big.size(), 1, back.data(), back.size()), nullptr);
  EXPECT_TRUE(back == want);
}

TEST(FloatCodecTest, MalformedDeltaPlanesAreRejected) {
  std::vector<uint8_t> want, back(100);
  const std::string enc = HandDeltaFp8(100, 16, 0x33, 3, &want);
  ASSERT_EQ(FloatDecode(enc.data(), enc.size(), 1, back.data(), back.size()), nullptr);
  for (char version : {1, 2}) {
    std::string old = enc;
    old[0] = version;
    EXPECT_STREQ(FloatDecode(old.data(), old.size(), 1, back.data(), back.size()),
                 "a delta Huffman plane in a version 1 or 2 payload");
  }
  // Cut after the mode byte, after the first byte, inside the stream sizes.
  for (size_t cut : {size_t{1}, size_t{2}, size_t{6}})
    EXPECT_STREQ(FloatDecode(enc.data(), kFloatCodecHeaderBytes + cut, 1, back.data(), back.size()),
                 "a Huffman plane header runs past the end")
        << cut;
  // A stream one byte longer and the next one shorter.
  const size_t sizes = kFloatCodecHeaderBytes + 5;
  std::string moved = enc;
  moved[sizes] = static_cast<char>(moved[sizes] + 1);
  moved[sizes + 4] = static_cast<char>(moved[sizes + 4] - 1);
  EXPECT_NE(FloatDecode(moved.data(), moved.size(), 1, back.data(), back.size()), nullptr);
  // Lengths {1, 2}: not a complete code.
  std::string incomplete = enc;
  incomplete[kFloatCodecHeaderBytes + 4] = 0x21;
  EXPECT_STREQ(FloatDecode(incomplete.data(), incomplete.size(), 1, back.data(), back.size()),
               "a Huffman code is not complete");
  // Smooth BF16 (both planes mode 4) truncated and corrupted anywhere: rejected or decoded, within bounds.
  for (size_t n : {size_t{3000}, size_t{20000}}) {
    const std::vector<float> w = Walk(n, 33, 20.0f, 0.01f);
    std::vector<uint16_t> bf16(n);
    for (size_t i = 0; i < n; ++i) bf16[i] = kernels::FloatToBf16(w[i]);
    const std::string smooth = Encode(bf16.data(), n, 2);
    ASSERT_EQ(PlaneModes(smooth, n, 2)[0], 4);
    GuardedInput in(smooth.size() + 64);
    ASSERT_EQ(GuardedDecode(in, smooth, 2, n * 2), nullptr);
    std::mt19937 rng(34);
    for (size_t k = 0; k < smooth.size(); k += std::max<size_t>(1, smooth.size() / 500))
      EXPECT_NE(GuardedDecode(in, smooth.substr(0, k), 2, n * 2), nullptr) << k;
    for (int t = 0; t < 3000; ++t) {
      std::string bad = smooth;
      for (int j = 0; j < 1 + t % 4; ++j) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
      GuardedDecode(in, bad, 2, n * 2);
    }
  }
}

}  // namespace
}  // namespace ttrace::store
