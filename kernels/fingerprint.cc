#include "kernels/fingerprint.h"

#include <cstring>

namespace ttrace::kernels {

uint64_t FingerprintHost(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t sum = 0;
  const size_t words = (bytes + 7) / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = 0;
    const size_t at = i * 8, take = bytes - at < 8 ? bytes - at : 8;
    memcpy(&w, p + at, take);  // little-endian host
    sum += FingerprintTerm(w, i);
  }
  return sum ^ static_cast<uint64_t>(bytes);
}

}  // namespace ttrace::kernels
