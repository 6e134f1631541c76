// libFuzzer harness: the float codec's decoder (store/float_codec.h) over hostile bytes. An input is one coded
// payload as a record carries it; the element size and count are taken from its own header (as a reader that
// trusted the record would pass them), elements capped at 2^20. Besides "no crash, no read or write out of bounds"
// (the sanitizers), it asserts what the decoder promises:
// - a count above FloatCodecMaxElements is never decoded (a reader refuses it before allocating);
// - a count or element size other than the header's is refused;
// - whatever decodes is lossless data: coded again (the current version) it decodes to the same bytes.
// Seeds: fuzz/corpus/float_codec/ (payloads of both codec versions, every plane mode, both stream layouts: docs/
// testing.md) and store/testdata/v1_*.fc.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_assert.h"
#include "store/float_codec.h"

namespace {

constexpr uint64_t kMaxElements = uint64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ttrace::store;
  if (size < kFloatCodecHeaderBytes) return 0;
  const size_t e = data[1];
  uint64_t n;
  memcpy(&n, data + 8, 8);
  if (!FloatCodecSupports(e)) return 0;
  const uint64_t max = FloatCodecMaxElements(data, size, e);
  if (n > max || n > kMaxElements) return 0;
  std::vector<uint8_t> out(static_cast<size_t>(n) * e + e);
  const char* why = FloatDecode(data, size, e, out.data(), static_cast<size_t>(n) * e);
  // The count is the header's: one element more is refused, and so is another element size.
  FUZZ_ASSERT(FloatDecode(data, size, e, out.data(), static_cast<size_t>(n + 1) * e) != nullptr);
  const size_t other = e == 1 ? 2 : 1;
  std::vector<uint8_t> other_out(static_cast<size_t>(n) * e);
  if (n * e % other == 0)
    FUZZ_ASSERT(FloatDecode(data, size, other, other_out.data(), static_cast<size_t>(n) * e) != nullptr);
  if (why != nullptr) return 0;
  why = FloatDecode(data, size, e, out.data(), static_cast<size_t>(n) * e);  // the n + 1 call clobbered `out`
  FUZZ_ASSERT(why == nullptr);
  out.resize(static_cast<size_t>(n) * e);
  std::vector<uint8_t> again(FloatCodecMaxBytes(static_cast<size_t>(n), e));
  again.resize(FloatEncode(out.data(), static_cast<size_t>(n), e, again.data()));
  std::vector<uint8_t> back(out.size());
  FUZZ_ASSERT(FloatDecode(again.data(), again.size(), e, back.data(), back.size()) == nullptr);
  FUZZ_ASSERT(back == out);
  return 0;
}
