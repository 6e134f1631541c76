// The FP32 slices of the 16-bit GEMM check (gemm_check.cc, docs/error-models.md "Full replay in FP32 slices") by
// AVX512-BF16 dot products (vdpbf16ps) instead of OpenBLAS's SGEMM, for operands whose every value is a BF16 number
// (captured BF16, FP8 E4M3 and E5M2; not FP16: 11 significant bits).
//
// What it computes, per output element (i, j) of a panel: ŝ_g, op(A)'s row i times op(B)'s column j over the g-th
// slice of k (terms g·ks .. min(k, (g+1)·ks) − 1), as one FP32 accumulator starting at 0 that adds the slice's terms a
// pair at a time; then ref = Σ_g ŝ_g and abs = Σ_g |ŝ_g| summed in FP32 in slice order, one rounding per addition —
// the same sums AddSlices forms of the SGEMM slices. vdpbf16ps (Intel SDM, "VDPBF16PS") computes per FP32 lane
// acc = (acc + a₁·b₁) + a₀·b₀, each BF16 product exact in FP32 (8 × 8 significant bits), each addition rounded to
// nearest even whatever MXCSR says, subnormal inputs read as 0 and subnormal results flushed to 0. So ŝ_g is a
// recursive sum of the slice's exact products in some order: within θ_{k_s}(2^-24)·P_g of s_g, plus 2^-126 per
// product and per addition flushed (2·k_s·2^-126), the model the SGEMM slices already carry; a padding term (a slice
// of odd length ends with a zero product) adds 0 exactly. BF16 subnormal inputs never get here (the check refuses
// FP32 subnormals). `Bf16SlicesTest` pins the hardware to that order bit for bit.
//
// Results do not depend on threads or on the panel's position: each element's sums are formed in one fixed order.
// Thread safety: the functions share no state; a Bf16Panel is used by one thread at a time.
#ifndef TTRACE_ANALYZER_BF16_SLICES_H_
#define TTRACE_ANALYZER_BF16_SLICES_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace ttrace::analyzer {

// Whether this CPU runs vdpbf16ps (AVX512-BF16 and the AVX512F/BW/VL/DQ the kernel uses).
bool Bf16DotAvailable();

// Packed operands: k in G slices of ks terms (the last ones shorter, none empty), each slice's terms in pairs (a slice
// of odd length ends with a zero); op(A) in blocks of 32 rows, op(B) in blocks of 12 columns (short blocks padded with
// zeros). Each 32-bit word holds two BF16 values, the even term in the low half.
struct Bf16Packed {
  int64_t rows = 0, k = 0, ks = 0;  // rows: of op(A), or columns of op(B)
  std::vector<int64_t> slice_pairs;  // pairs per slice
  int64_t pairs = 0;                 // their sum
  struct Free {
    void operator()(uint32_t* p) const;
  };
  // [block][pair][32 rows or 12 columns]: blocks · pairs · block words, 2 MiB-aligned and advised for transparent huge
  // pages (written once: a page fault per 2 MiB instead of per 4 KiB).
  std::unique_ptr<uint32_t[], Free> words;
  size_t capacity = 0;  // of words (kept across packings: no fresh pages per panel)
};

constexpr int kBf16RowBlock = 32, kBf16ColBlock = 12;

// Packs `rows` vectors of length k (vector r at v + r·ld, FP32) into `out` in blocks of `block` (kBf16RowBlock for
// op(A)'s rows, kBf16ColBlock for op(B)'s columns), slices of ks terms. False (out unspecified) when a value is not
// a BF16 number (its low 16 bits not zero).
bool PackBf16(const float* v, int64_t rows, int64_t k, int64_t ld, int64_t ks, int block, Bf16Packed* out);

// The same from stored BF16 values (captured bytes, 2 per value): element l of vector r is value first + r·step_r +
// l·step_l (op(A)'s rows of a stored A: steps (k, 1) when transposed, (1, m) when not; op(B)'s columns: (k, 1), or
// (1, n) when transposed). Every value is taken (no check: PackedSums tells the values the slices refuse).
void PackBf16Stored(const char* bytes, uint64_t first, int64_t rows, int64_t k, int64_t step_r, int64_t step_l,
                    int64_t ks, int block, Bf16Packed* out);

// Per packed vector, in term order (as the check's VectorSums sums FP32 copies): Σ|x|, √(Σx²), max|x| in FP64 into
// abs_sum, norm, max (each `rows` long), the largest |x| of all into *max_all. False when a value is Inf, NaN or
// subnormal (the FP32 slices refuse them), the outputs then unspecified.
bool PackedSums(const Bf16Packed& p, int block, double* abs_sum, double* norm, double* max, double* max_all);

// ref and abs (column-major, ld ldc) of op(A)'s rows times op(B)'s columns, as above. a packed with kBf16RowBlock,
// b with kBf16ColBlock, both with the same k and ks. Requires Bf16DotAvailable().
void Bf16Slices(const Bf16Packed& a, const Bf16Packed& b, float* ref, float* abs, int64_t ldc);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_BF16_SLICES_H_
