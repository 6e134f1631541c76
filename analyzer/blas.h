// The analyzer's FP64 linear algebra through OpenBLAS (Debian's libopenblas-dev): the one place that includes
// cblas.h. Column-major, 64-bit dimensions checked against BLAS's 32-bit indices by the caller (FitsBlas).
//
// Kernels: OpenBLAS picks them per CPU when the library loads (0.3.21 picks Cooperlake, its AVX-512 kernels, on this
// project's AMD Zen 5), unless OPENBLAS_CORETYPE names a core; the analyzer keeps the user's choice and names the
// kernels in its report (BlasCoreName), because they set the GEMM check's speed (docs/design.md).
//
// Thread safety: the calls are reentrant (OpenBLAS locks its buffers). SetBlasThreads changes a process-wide
// setting and must not run while another thread is inside a BLAS call.
#ifndef TTRACE_ANALYZER_BLAS_H_
#define TTRACE_ANALYZER_BLAS_H_

#include <cstdint>
#include <string>

namespace ttrace::analyzer {

// Whether every dimension and leading dimension fits BLAS's int.
bool FitsBlas(int64_t m, int64_t n, int64_t k);

// c (m x n, ldc) = op(a) · op(b), op(a) m x k, op(b) k x n; `ta`/`tb` transpose the stored matrix (a stored k x m
// when ta). k = 0 gives zeros.
void MatMul(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
            int64_t ldb, double* c, int64_t ldc);

// c (m x n, ldc) += op(a) · op(b) (k = 0 leaves c as it is).
void MatMulAdd(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
               int64_t ldb, double* c, int64_t ldc);

// The same in FP32 (sgemm): c (m x n, ldc) = op(a) · op(b). For inputs whose products are exact in FP32 (the GEMM
// check's FP32 slices, gemm_check.cc), its only rounding is the summation's.
void MatMulF32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc);

// y (rows of op(a)) = op(a) · x, a stored rows x cols (lda).
void MatVec(bool ta, int64_t rows, int64_t cols, const double* a, int64_t lda, const double* x, double* y);

// The kernels OpenBLAS runs (openblas_get_corename: "Cooperlake", "Haswell", ...), with " (OPENBLAS_CORETYPE)"
// after it when that variable is set, i.e. the user chose them.
std::string BlasCoreName();

// Threads OpenBLAS uses inside one call; 0 = its default. Returns the previous setting.
int SetBlasThreads(int threads);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_BLAS_H_
