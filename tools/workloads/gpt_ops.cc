#include "tools/workloads/gpt_ops.h"

#include <algorithm>
#include <cmath>

namespace ttrace::workloads::gpt {

void LayerNorm(const float* x, int rows, int cols, const float* g, const float* b, float* y, float* hat,
               float* rstd) {
  for (int i = 0; i < rows; ++i) {
    const float* xi = x + static_cast<long>(i) * cols;
    double mean = 0, var = 0;
    for (int j = 0; j < cols; ++j) mean += xi[j];
    mean /= cols;
    for (int j = 0; j < cols; ++j) var += (xi[j] - mean) * (xi[j] - mean);
    const float r = static_cast<float>(1.0 / std::sqrt(var / cols + 1e-5));
    rstd[i] = r;
    for (int j = 0; j < cols; ++j) {
      const long k = static_cast<long>(i) * cols + j;
      hat[k] = static_cast<float>(xi[j] - mean) * r;
      y[k] = hat[k] * g[j] + b[j];
    }
  }
}

void LayerNormBackward(const float* dy, const float* hat, const float* rstd, int rows, int cols, const float* g,
                       float* dx, float* dg, float* db) {
  for (int i = 0; i < rows; ++i) {
    const long o = static_cast<long>(i) * cols;
    double mean_d = 0, mean_dh = 0;
    for (int j = 0; j < cols; ++j) {
      const float d = dy[o + j] * g[j];
      mean_d += d;
      mean_dh += d * hat[o + j];
      dg[j] += dy[o + j] * hat[o + j];
      db[j] += dy[o + j];
    }
    mean_d /= cols;
    mean_dh /= cols;
    for (int j = 0; j < cols; ++j)
      dx[o + j] = rstd[i] * static_cast<float>(dy[o + j] * g[j] - mean_d - hat[o + j] * mean_dh);
  }
}

namespace {
constexpr float kGeluC = 0.7978845608f;  // sqrt(2 / pi)
}

float Gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }

float GeluGrad(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
}

void CausalSoftmax(float* s, int mats, int seq, int shift) {
  for (long r = 0; r < static_cast<long>(mats) * seq; ++r) {
    float* row = s + r * seq;
    const int last = std::min(seq - 1, static_cast<int>(r % seq) + shift);
    float mx = row[0];
    for (int c = 1; c <= last; ++c) mx = std::max(mx, row[c]);
    double sum = 0;
    for (int c = 0; c <= last; ++c) sum += std::exp(row[c] - mx);
    for (int c = 0; c < seq; ++c) row[c] = c <= last ? static_cast<float>(std::exp(row[c] - mx) / sum) : 0.0f;
  }
}

void SoftmaxBackward(const float* p, const float* dp, float* ds, int mats, int seq) {
  for (long r = 0; r < static_cast<long>(mats) * seq; ++r) {
    const long o = r * seq;
    double dot = 0;
    for (int c = 0; c < seq; ++c) dot += dp[o + c] * p[o + c];
    for (int c = 0; c < seq; ++c) ds[o + c] = p[o + c] * static_cast<float>(dp[o + c] - dot);
  }
}

void AddColumnSums(const float* x, int rows, int cols, float* acc) {
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) acc[j] += x[static_cast<long>(i) * cols + j];
}

}  // namespace ttrace::workloads::gpt
