// include/ttrace/byte_shuffle.h: the layout the format defines (stored[b * n + i] = full[i * e + b]) for every
// element size, and the round trip.
#include "ttrace/byte_shuffle.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::format {
namespace {

TEST(ByteShuffleTest, LayoutAndRoundTrip) {
  for (size_t e : {1, 2, 3, 4, 8}) {
    for (size_t n : {0, 1, 7, 1000}) {
      std::vector<unsigned char> full(n * e), stored(n * e), back(n * e);
      for (size_t x = 0; x < full.size(); ++x) full[x] = static_cast<unsigned char>(x * 131 + e);
      ShuffleBytes(full.data(), n, e, stored.data());
      for (size_t i = 0; i < n; ++i)
        for (size_t b = 0; b < e; ++b) ASSERT_EQ(stored[b * n + i], full[i * e + b]) << "e " << e << " n " << n;
      UnshuffleBytes(stored.data(), n, e, back.data());
      EXPECT_EQ(back, full) << "e " << e << " n " << n;
    }
  }
}

TEST(ByteShuffleTest, Fp32ExponentBytesComeLast) {
  const float values[3] = {1.0f, -2.0f, 0.5f};  // 0x3f800000, 0xc0000000, 0x3f000000 (little-endian)
  unsigned char stored[12];
  ShuffleBytes(values, 3, 4, stored);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(stored + 9), 3), std::string("\x3f\xc0\x3f", 3));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(stored + 6), 3), std::string("\x80\x00\x00", 3));
}

}  // namespace
}  // namespace ttrace::format
