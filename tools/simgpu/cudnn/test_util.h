// Test helpers for simgpu's cuDNN: strided tensors of any supported type held on the host as the exact values
// their storage represents, copied to and from device memory; an FP64 convolution reference written
// independently of conv_compute.cc (scatter loops over logical NCHW indices); and the deterministic
// floating-point error bound of a convolution.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_TEST_UTIL_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_TEST_UTIL_H_

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::cudnn::testing {

inline size_t Bytes(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_INT64     ? 8
         : t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_INT32 ? 4
         : t == CUDNN_DATA_BOOLEAN                        ? 1
                                                          : 2;
}

// Unit roundoff of a floating storage type.
inline double UnitRoundoff(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_DOUBLE: return std::ldexp(1.0, -53);
    case CUDNN_DATA_FLOAT: return std::ldexp(1.0, -24);
    case CUDNN_DATA_HALF: return std::ldexp(1.0, -11);
    default: return std::ldexp(1.0, -8);
  }
}

// gamma_n(u) = n u / (1 - n u).
inline double Gamma(int64_t n, double u) { return n * u / (1.0 - n * u); }

inline void Encode(double v, cudnnDataType_t t, unsigned char* out) {
  if (t == CUDNN_DATA_DOUBLE) {
    std::memcpy(out, &v, 8);
  } else if (t == CUDNN_DATA_FLOAT) {
    float f = static_cast<float>(v);
    std::memcpy(out, &f, 4);
  } else if (t == CUDNN_DATA_INT32) {
    const int32_t i = static_cast<int32_t>(v);
    std::memcpy(out, &i, 4);
  } else if (t == CUDNN_DATA_INT64) {
    const int64_t i = static_cast<int64_t>(v);
    std::memcpy(out, &i, 8);
  } else {
    uint16_t h = t == CUDNN_DATA_HALF ? simgpu::nv::FloatToHalf(static_cast<float>(v))
                                      : simgpu::nv::FloatToBf16(static_cast<float>(v));
    std::memcpy(out, &h, 2);
  }
}

inline double Decode(cudnnDataType_t t, const unsigned char* in) {
  if (t == CUDNN_DATA_DOUBLE) {
    double v;
    std::memcpy(&v, in, 8);
    return v;
  }
  if (t == CUDNN_DATA_FLOAT) {
    float f;
    std::memcpy(&f, in, 4);
    return f;
  }
  if (t == CUDNN_DATA_INT32) {
    int32_t i;
    std::memcpy(&i, in, 4);
    return i;
  }
  if (t == CUDNN_DATA_INT64) {
    int64_t i;
    std::memcpy(&i, in, 8);
    return static_cast<double>(i);
  }
  uint16_t h;
  std::memcpy(&h, in, 2);
  return t == CUDNN_DATA_HALF ? simgpu::nv::HalfToFloat(h) : simgpu::nv::Bf16ToFloat(h);
}

// A strided tensor: logical values (row-major over dims) and the device storage they occupy.
class Tensor {
 public:
  Tensor(cudnnDataType_t type, std::vector<int64_t> dims, std::vector<int64_t> strides)
      : type_(type), dims_(std::move(dims)), strides_(std::move(strides)) {
    int64_t n = 1, extent = 1;
    for (size_t i = 0; i < dims_.size(); ++i) {
      n *= dims_[i];
      extent += (dims_[i] - 1) * strides_[i];
    }
    values_.assign(static_cast<size_t>(n), 0.0);
    storage_.assign(static_cast<size_t>(extent) * Bytes(type_), 0);
    cudaMalloc(&device_, storage_.size());
  }
  ~Tensor() { cudaFree(device_); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Packed strides: NCHW (row-major) or NHWC (dimension 1 fastest).
  static std::vector<int64_t> Packed(const std::vector<int64_t>& dims, bool nhwc) {
    std::vector<int64_t> s(dims.size());
    int64_t acc = 1;
    if (!nhwc) {
      for (size_t i = dims.size(); i-- > 0;) {
        s[i] = acc;
        acc *= dims[i];
      }
      return s;
    }
    s[1] = 1;
    acc = dims[1];
    for (size_t i = dims.size(); i-- > 2;) {
      s[i] = acc;
      acc *= dims[i];
    }
    s[0] = acc;
    return s;
  }

  size_t size() const { return values_.size(); }
  const std::vector<int64_t>& dims() const { return dims_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  cudnnDataType_t type() const { return type_; }
  void* device() const { return device_; }
  double at(size_t logical) const { return values_[logical]; }
  const std::vector<double>& values() const { return values_; }

  // Storage offset (elements) of a logical row-major index.
  int64_t Offset(size_t logical) const {
    int64_t off = 0;
    for (size_t i = dims_.size(); i-- > 0;) {
      off += static_cast<int64_t>(logical % static_cast<size_t>(dims_[i])) * strides_[i];
      logical /= static_cast<size_t>(dims_[i]);
    }
    return off;
  }

  // Sets logical element i to v rounded to the storage type (the held value is what storage represents).
  void Set(size_t i, double v) {
    unsigned char* p = &storage_[static_cast<size_t>(Offset(i)) * Bytes(type_)];
    Encode(v, type_, p);
    values_[i] = Decode(type_, p);
  }
  // Random values in [-2, 2), or small integers in [-2, 2] when `integers`.
  void Fill(std::mt19937* rng, bool integers) {
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    std::uniform_int_distribution<int> small(-2, 2);
    for (size_t i = 0; i < size(); ++i) Set(i, integers ? small(*rng) : real(*rng));
  }
  void Upload() { cudaMemcpy(device_, storage_.data(), storage_.size(), cudaMemcpyHostToDevice); }
  void Download() {
    cudaDeviceSynchronize();
    cudaMemcpy(storage_.data(), device_, storage_.size(), cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < size(); ++i) {
      values_[i] = Decode(type_, &storage_[static_cast<size_t>(Offset(i)) * Bytes(type_)]);
    }
  }
  // The storage bytes (after Download), and those of logical element i.
  const std::vector<unsigned char>& storage() const { return storage_; }
  std::vector<unsigned char> ElementBytes(size_t i) const {
    const unsigned char* p = &storage_[static_cast<size_t>(Offset(i)) * Bytes(type_)];
    return std::vector<unsigned char>(p, p + Bytes(type_));
  }

 private:
  cudnnDataType_t type_;
  std::vector<int64_t> dims_, strides_;
  std::vector<double> values_;
  std::vector<unsigned char> storage_;
  void* device_ = nullptr;
};

// A convolution's geometry for the reference (2 or 3 spatial dimensions, symmetric padding).
struct ConvCase {
  int64_t n, c, k, groups;
  std::vector<int64_t> in, filter, pad, stride, dilation;
  bool flip = false;  // CUDNN_CONVOLUTION
  std::vector<int64_t> Out() const {
    std::vector<int64_t> out;
    for (size_t d = 0; d < in.size(); ++d) {
      out.push_back((in[d] + 2 * pad[d] - ((filter[d] - 1) * dilation[d] + 1)) / stride[d] + 1);
    }
    return out;
  }
  std::vector<int64_t> XDims() const { return Concat({n, c}, in); }
  std::vector<int64_t> WDims() const { return Concat({k, c / groups}, filter); }
  std::vector<int64_t> YDims() const { return Concat({n, k}, Out()); }
  static std::vector<int64_t> Concat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  }
};

enum class Kind { kForward, kBackwardData, kBackwardFilter };

// FP64 reference of one convolution in logical NCHW order: out receives sum(products), abs the sum of |products|
// (for the error bound). x, w, y are logical row-major arrays; the output array is the one `kind` writes.
inline void ReferenceConv(const ConvCase& cc, Kind kind, const std::vector<double>& x, const std::vector<double>& w,
                          const std::vector<double>& y, std::vector<double>* out, std::vector<double>* abs) {
  const std::vector<int64_t> o = cc.Out();
  const size_t D = cc.in.size();
  auto count = [](const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t e : v) p *= e;
    return p;
  };
  const int64_t ins = count(cc.in), outs = count(o), taps = count(cc.filter);
  const int64_t cpg = cc.c / cc.groups, kpg = cc.k / cc.groups;
  const size_t out_size = static_cast<size_t>(kind == Kind::kForward ? cc.n * cc.k * outs
                                              : kind == Kind::kBackwardData ? cc.n * cc.c * ins
                                                                            : cc.k * cpg * taps);
  out->assign(out_size, 0.0);
  abs->assign(out_size, 0.0);
  std::vector<int64_t> oi(D), fi(D);
  for (int64_t n = 0; n < cc.n; ++n) {
    for (int64_t k = 0; k < cc.k; ++k) {
      const int64_t g = k / kpg;
      for (int64_t op = 0; op < outs; ++op) {
        int64_t rem = op;
        for (size_t d = D; d-- > 0;) {
          oi[d] = rem % o[d];
          rem /= o[d];
        }
        for (int64_t cl = 0; cl < cpg; ++cl) {
          for (int64_t t = 0; t < taps; ++t) {
            int64_t trem = t, ip = 0;
            bool inside = true;
            for (size_t d = D; d-- > 0;) {
              fi[d] = trem % cc.filter[d];
              trem /= cc.filter[d];
            }
            for (size_t d = 0; d < D; ++d) {
              const int64_t f = cc.flip ? cc.filter[d] - 1 - fi[d] : fi[d];
              const int64_t i = oi[d] * cc.stride[d] - cc.pad[d] + f * cc.dilation[d];
              inside = inside && i >= 0 && i < cc.in[d];
              ip = ip * cc.in[d] + i;
            }
            if (!inside) continue;
            const size_t xi = static_cast<size_t>((n * cc.c + g * cpg + cl) * ins + ip);
            const size_t wi = static_cast<size_t>((k * cpg + cl) * taps + t);
            const size_t yi = static_cast<size_t>((n * cc.k + k) * outs + op);
            double prod;
            size_t at;
            if (kind == Kind::kForward) {
              prod = x[xi] * w[wi];
              at = yi;
            } else if (kind == Kind::kBackwardData) {
              prod = y[yi] * w[wi];
              at = xi;
            } else {
              prod = y[yi] * x[xi];
              at = wi;
            }
            (*out)[at] += prod;
            (*abs)[at] += std::fabs(prod);
          }
        }
      }
    }
  }
}

}  // namespace simgpu::cudnn::testing

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_TEST_UTIL_H_
