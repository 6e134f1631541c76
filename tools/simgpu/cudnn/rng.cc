// The RNG distribution descriptor and the RNG operation's arithmetic (rng.h, backend_desc.h). The counter layout
// is cuRAND's because NVIDIA documents no other; see rng.h.
#include "tools/simgpu/cudnn/rng.h"

#include <cstring>
#include <vector>

#include "tools/simgpu/cudnn/backend_desc.h"
#include "tools/simgpu/cudnn/data_type.h"

namespace simgpu::cudnn {
namespace {

int64_t LoadInteger(const Bound& t) {
  if (t.spec->dtype == CUDNN_DATA_INT64) {
    int64_t v;
    std::memcpy(&v, t.data, sizeof(v));
    return v;
  }
  int32_t v;
  std::memcpy(&v, t.data, sizeof(v));
  return v;
}

}  // namespace

std::array<uint32_t, 4> Philox4x32x10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

float PhiloxUniform(uint64_t seed, uint64_t offset, uint64_t element) {
  const uint64_t block = offset / 4;
  const std::array<uint32_t, 4> out = Philox4x32x10(
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), static_cast<uint32_t>(element),
       static_cast<uint32_t>(element >> 32)},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const float kScale = 2.3283064e-10f;  // 2^-32 rounded to FP32, as curand_uniform uses it
  return static_cast<float>(out[offset % 4]) * kScale + kScale / 2.0f;
}

bool RngSupported(const RngParams& params) {
  return params.distribution == CUDNN_RNG_DISTRIBUTION_BERNOULLI ||
         params.distribution == CUDNN_RNG_DISTRIBUTION_UNIFORM;
}

void RunRng(const RngParams& params, int64_t seed_value, const Bound& seed, const Bound& offset, const Bound& y) {
  const uint64_t s = static_cast<uint64_t>(seed.spec != nullptr ? LoadInteger(seed) : seed_value);
  const uint64_t off = static_cast<uint64_t>(offset.spec != nullptr ? LoadInteger(offset) : 0);
  const TensorSpec& ys = *y.spec;
  const int64_t n = ys.Elements();
  std::vector<int64_t> idx(ys.dims.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t at = 0;
    for (size_t i = 0; i < idx.size(); ++i) at += idx[i] * ys.strides[i];
    const float u = PhiloxUniform(s, off, static_cast<uint64_t>(e));
    double v;
    if (params.distribution == CUDNN_RNG_DISTRIBUTION_BERNOULLI) {
      v = static_cast<double>(u) < params.bernoulli_probability ? 1.0 : 0.0;
    } else {
      v = params.uniform_min + static_cast<double>(u) * (params.uniform_max - params.uniform_min);
    }
    StoreDouble(y.data, static_cast<size_t>(at), ys.dtype, v);
    for (size_t i = idx.size(); i-- > 0;) {
      if (++idx[i] < ys.dims[i]) break;
      idx[i] = 0;
    }
  }
}

cudnnStatus_t RngDescriptor::DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) {
  switch (name) {
    case CUDNN_ATTR_RNG_DISTRIBUTION: return ReadScalar(in, CUDNN_TYPE_RNG_DISTRIBUTION, &params_.distribution);
    case CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY: return ReadScale(in, &params_.bernoulli_probability);
    case CUDNN_ATTR_RNG_UNIFORM_DIST_MINIMUM: return ReadScale(in, &params_.uniform_min);
    case CUDNN_ATTR_RNG_UNIFORM_DIST_MAXIMUM: return ReadScale(in, &params_.uniform_max);
    case CUDNN_ATTR_RNG_NORMAL_DIST_MEAN: return ReadScale(in, &params_.normal_mean);
    case CUDNN_ATTR_RNG_NORMAL_DIST_STANDARD_DEVIATION: return ReadScale(in, &params_.normal_stddev);
    default: return Fail(CUDNN_STATUS_BAD_PARAM, "not an RNG attribute");
  }
}

cudnnStatus_t RngDescriptor::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  switch (name) {
    case CUDNN_ATTR_RNG_DISTRIBUTION: return WriteScalar(out, CUDNN_TYPE_RNG_DISTRIBUTION, params_.distribution);
    case CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY:
      return WriteScalar(out, CUDNN_TYPE_DOUBLE, params_.bernoulli_probability);
    default: return Fail(CUDNN_STATUS_NOT_SUPPORTED, "simgpu reads back distribution and probability only");
  }
}

cudnnStatus_t RngDescriptor::DoFinalize() {
  const RngParams& p = params_;
  if (p.distribution != CUDNN_RNG_DISTRIBUTION_BERNOULLI && p.distribution != CUDNN_RNG_DISTRIBUTION_UNIFORM &&
      p.distribution != CUDNN_RNG_DISTRIBUTION_NORMAL) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "unknown RNG distribution");
  }
  if (p.distribution == CUDNN_RNG_DISTRIBUTION_BERNOULLI &&
      !(p.bernoulli_probability >= 0.0 && p.bernoulli_probability <= 1.0)) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "Bernoulli probability outside [0, 1]");
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace simgpu::cudnn
