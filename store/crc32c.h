// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the trace format (docs/format.md).
#ifndef TTRACE_STORE_CRC32C_H_
#define TTRACE_STORE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace ttrace::store {

// Extends `crc` (0 for a fresh checksum) over `n` bytes. Crc32c("123456789") == 0xE3069283.
// Uses the CPU's crc32 instruction when present.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);
// The portable table-driven version (for tests and CPUs without SSE4.2).
uint32_t Crc32cSoftware(const void* data, size_t n, uint32_t crc = 0);

}  // namespace ttrace::store

#endif  // TTRACE_STORE_CRC32C_H_
