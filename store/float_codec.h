// Float codec (format.h: PayloadKind::kFloatCoded; the byte layout is specified in docs/format.md, "Float-coded
// payloads"). Lossless for every bit pattern (NaN payloads, Inf, subnormals, -0).
//
// Each element's sign bit is rotated below its lowest bit, so the top byte of an FP32, BF16 or FP64 element is its
// exponent (FP16: exponent and the top 3 mantissa bits; FP8: the whole value). The rotated elements of a block
// (2^16 of them) are split into byte planes; each plane is stored raw, as one repeated byte, or canonical-Huffman
// coded (code lengths <= 12, four interleaved bit streams): constant when it holds one value, else Huffman when the
// code comes out smaller than raw (a plane of at least 16384 symbols whose code is too long to decode two symbols a
// lookup in most 12-bit windows, FP8 and FP16: eight interleaved streams, so a decoder keeps eight table-lookup
// chains in flight; codec version 2; except where sampled neighbours repeat, smooth data, whose four streams of
// consecutive elements keep the local repeats the writer's zstd trial finds). Since codec version 3 a plane whose
// sampled differences between neighbouring bytes have at most 7/8 of the entropy of its bytes (smooth data: a
// random walk's mantissa bytes) is coded as those differences, four streams, the decoder summing them back. The
// code is built from the plane's exact byte range and a sampled histogram (a quarter of the block; every byte of
// the range the sample missed gets a code too), so it may miss the best Huffman code by a little (0-0.5% of the
// ratio on BF16, FP16 and FP32, up to 1% on FP8: docs/codec.md). In trained tensors only the exponent plane is far
// from uniform, and Huffman codes it within a few hundredths of a bit of its entropy; the mantissa planes stay raw
// unless a sample says coding them (or their differences) saves at least 1/16 (smooth or quantized data, FP32
// holding BF16 values).
//
// Pure functions over bytes: the shim's drain encodes (FloatEncode allocates nothing and cannot fail; it uses a
// 64 KiB and a 96 KiB scratch block on the stack, FloatDecode four of 64 KiB, a 32 KiB table and up to 9 KiB more
// per element byte), the reader decodes. FloatDecode treats its input as hostile: it rejects any malformed payload
// with a reason and never reads or writes outside the two buffers it is given. Thread-safe (no state).
#ifndef TTRACE_STORE_FLOAT_CODEC_H_
#define TTRACE_STORE_FLOAT_CODEC_H_

#include <cstddef>
#include <cstdint>

namespace ttrace::store {

// Version 2 (codec24) added eight-stream Huffman planes, version 3 (codec26) delta planes (the Huffman-coded
// differences of a plane's neighbouring bytes: smooth data); the decoder reads versions 1 to 3, the encoder writes 3.
inline constexpr uint8_t kFloatCodecVersion = 3;
inline constexpr uint8_t kFloatCodecOldestVersion = 1;
inline constexpr size_t kFloatCodecHeaderBytes = 16;

// True for the element sizes the codec takes (1, 2, 4, 8 bytes).
bool FloatCodecSupports(size_t elem_bytes);

// Largest encoding of n elements of elem_bytes: the capacity FloatEncode's `out` must have.
size_t FloatCodecMaxBytes(size_t n, size_t elem_bytes);

// Encodes n little-endian elements of elem_bytes (FloatCodecSupports) from `in` into `out` (capacity
// FloatCodecMaxBytes(n, elem_bytes), not overlapping `in`). Returns the bytes written.
size_t FloatEncode(const void* in, size_t n, size_t elem_bytes, void* out);

// As FloatEncode, but the codec version 1 layout (four streams in every Huffman plane), byte for byte what the
// version 1 encoder wrote: for the tests of the decoder's version 1 path and for codec_bench's comparison. The shim
// does not call it.
size_t FloatEncodeVersion1(const void* in, size_t n, size_t elem_bytes, void* out);

// As FloatEncode, but the codec version 2 layout (no delta planes), byte for byte what the version 2 encoder wrote
// (codec_bench compares the two; the tests read its payloads). The shim does not call it.
size_t FloatEncodeVersion2(const void* in, size_t n, size_t elem_bytes, void* out);

// The most elements `size` coded bytes at `in` can decode to (every block costs at least 2 bytes a plane), from
// its header's block size; 0 when the header is malformed. A reader refuses a record whose shape needs more before
// it allocates for it.
uint64_t FloatCodecMaxElements(const void* in, size_t size, size_t elem_bytes);

// Decodes the `size` bytes at `in` into exactly `out_bytes` bytes at `out`, elements of `elem_bytes`. Returns
// nullptr on success, else a static string saying what is malformed (the header's element size or count differ
// from the caller's, a plane or stream runs past the end, an invalid code, trailing bytes, ...). On failure `out`
// holds unspecified bytes.
const char* FloatDecode(const void* in, size_t size, size_t elem_bytes, void* out, size_t out_bytes);

}  // namespace ttrace::store

#endif  // TTRACE_STORE_FLOAT_CODEC_H_
