// OpenBLAS's cblas interface; Debian's pthread build (the one pkg-config names) parallelizes a call itself, so the
// thread count is set per process.
#include "analyzer/blas.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace ttrace::analyzer {

bool FitsBlas(int64_t m, int64_t n, int64_t k) {
  const int64_t big = std::max({m, n, k});
  return m >= 0 && n >= 0 && k >= 0 && big <= INT_MAX;
}

void MatMul(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
            int64_t ldb, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t j = 0; j < n; ++j) std::fill(c + j * ldc, c + j * ldc + m, 0.0);
    return;
  }
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(std::max<int64_t>(1, lda)), b,
              static_cast<int>(std::max<int64_t>(1, ldb)), 0.0, c, static_cast<int>(std::max<int64_t>(1, ldc)));
}

void MatMulAdd(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
               int64_t ldb, double* c, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0) return;
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(std::max<int64_t>(1, lda)), b,
              static_cast<int>(std::max<int64_t>(1, ldb)), 1.0, c, static_cast<int>(std::max<int64_t>(1, ldc)));
}

void MatMulF32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t j = 0; j < n; ++j) std::fill(c + j * ldc, c + j * ldc + m, 0.0f);
    return;
  }
  cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(std::max<int64_t>(1, lda)), b,
              static_cast<int>(std::max<int64_t>(1, ldb)), 0.0f, c, static_cast<int>(std::max<int64_t>(1, ldc)));
}

void MatVec(bool ta, int64_t rows, int64_t cols, const double* a, int64_t lda, const double* x, double* y) {
  const int64_t out = ta ? cols : rows;
  if (out == 0) return;
  if (rows == 0 || cols == 0) {
    std::fill(y, y + out, 0.0);
    return;
  }
  cblas_dgemv(CblasColMajor, ta ? CblasTrans : CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols), 1.0, a,
              static_cast<int>(std::max<int64_t>(1, lda)), x, 1, 0.0, y, 1);
}

std::string BlasCoreName() {
  const char* core = openblas_get_corename();
  std::string name = core != nullptr ? core : "unknown";
  if (getenv("OPENBLAS_CORETYPE") != nullptr) name += " (OPENBLAS_CORETYPE)";
  return name;
}

int SetBlasThreads(int threads) {
  const int before = openblas_get_num_threads();
  if (threads > 0) openblas_set_num_threads(threads);
  return before;
}

}  // namespace ttrace::analyzer
