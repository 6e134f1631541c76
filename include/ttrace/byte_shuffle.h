// Byte shuffle of tensor payloads (format.h: PayloadKind::kShuffled): n elements of e bytes are stored as the n
// first bytes of every element, then the n second bytes, and so on: out[b * n + i] = in[i * e + b]. Exponent and
// high mantissa bytes of neighbouring values are alike, so grouping them lets zstd find runs it cannot see between
// interleaved low bytes (docs/format.md gives the measured ratios). Hermetic, header-only: the shim encodes, the
// analyzer decodes.
#ifndef TTRACE_BYTE_SHUFFLE_H_
#define TTRACE_BYTE_SHUFFLE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ttrace::format {
namespace detail {

template <size_t E>
inline void ShuffleFixed(const unsigned char* in, size_t n, unsigned char* out) {
  for (size_t i = 0; i < n; ++i)
    for (size_t b = 0; b < E; ++b) out[b * n + i] = in[i * E + b];
}

template <size_t E>
inline void UnshuffleFixed(const unsigned char* in, size_t n, unsigned char* out) {
  for (size_t i = 0; i < n; ++i)
    for (size_t b = 0; b < E; ++b) out[i * E + b] = in[b * n + i];
}

}  // namespace detail

// in and out hold n * elem_bytes bytes and do not overlap. elem_bytes 1 is a plain copy.
inline void ShuffleBytes(const void* in, size_t n, size_t elem_bytes, void* out) {
  const auto* i = static_cast<const unsigned char*>(in);
  auto* o = static_cast<unsigned char*>(out);
  switch (elem_bytes) {
    case 2: return detail::ShuffleFixed<2>(i, n, o);
    case 4: return detail::ShuffleFixed<4>(i, n, o);
    case 8: return detail::ShuffleFixed<8>(i, n, o);
    default:
      for (size_t e = 0; e < n; ++e)
        for (size_t b = 0; b < elem_bytes; ++b) o[b * n + e] = i[e * elem_bytes + b];
  }
}

inline void UnshuffleBytes(const void* in, size_t n, size_t elem_bytes, void* out) {
  const auto* i = static_cast<const unsigned char*>(in);
  auto* o = static_cast<unsigned char*>(out);
  switch (elem_bytes) {
    case 2: return detail::UnshuffleFixed<2>(i, n, o);
    case 4: return detail::UnshuffleFixed<4>(i, n, o);
    case 8: return detail::UnshuffleFixed<8>(i, n, o);
    default:
      for (size_t e = 0; e < n; ++e)
        for (size_t b = 0; b < elem_bytes; ++b) o[e * elem_bytes + b] = i[b * n + e];
  }
}

}  // namespace ttrace::format

#endif  // TTRACE_BYTE_SHUFFLE_H_
