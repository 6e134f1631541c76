// Tensor fingerprints: a 64-bit digest of a buffer's bytes that a GPU computes in parallel and the CPU twin
// reproduces bit for bit, so a fingerprint taken on the device (shim, screening mode) compares with one taken
// on the host (analyzer) — OpGuard-style bitwise comparison without moving the tensor.
//
// Definition (order-independent, hence deterministic under any parallel reduction):
//   words w_i = the buffer read as little-endian u64 (the tail zero-padded to 8 bytes), i = 0 .. ceil(n/8)-1
//   Fingerprint = (Σ_i Mix(w_i ^ (i · 0x9E3779B97F4A7C15)) mod 2^64) ^ n
// with Mix the SplitMix64 finalizer. Equal buffers give equal fingerprints; a change of one word changes the
// sum with probability 1 - 2^-64 (Mix is a bijection).
#ifndef TTRACE_KERNELS_FINGERPRINT_H_
#define TTRACE_KERNELS_FINGERPRINT_H_

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace ttrace::kernels {

TTRACE_HD inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
TTRACE_HD inline uint64_t FingerprintTerm(uint64_t word, uint64_t index) {
  return Mix(word ^ (index * 0x9E3779B97F4A7C15ull));
}

// CPU twin: fingerprint of `bytes` bytes at `data` (host memory).
uint64_t FingerprintHost(const void* data, size_t bytes);

// GPU: fingerprint of `bytes` bytes of device memory at `data`, computed on `stream` into *out_device (a device
// u64). Asynchronous; returns false when this build has no CUDA kernels (built without nvcc) or the launch
// failed. Defined in fingerprint.cu.
bool FingerprintDevice(const void* data, size_t bytes, uint64_t* out_device, void* stream);
bool HaveDeviceKernels();

}  // namespace ttrace::kernels

#endif  // TTRACE_KERNELS_FINGERPRINT_H_
