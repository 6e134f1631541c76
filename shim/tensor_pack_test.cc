#include "shim/tensor_pack.h"

#include <library_types.h>
#include <nccl.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

using format::DType;

// Stages `spec` from host memory the way CaptureEngine copies it from the device (pitched copies when `pitched`
// allows them), then packs it unless the staging is already dense.
std::vector<float> StageAndPack(const TensorSpec& spec, StagingPlan* plan, bool pitched = false) {
  EXPECT_TRUE(PlanStaging(spec, plan, pitched));
  std::vector<char> staging(plan->staging_bytes);
  const char* src = static_cast<const char*>(spec.ptr);
  for (uint64_t c = 0; c < plan->copies; ++c) {
    const char* from = src + c * plan->copy_src_stride * plan->elem_bytes;
    char* to = staging.data() + c * plan->copy_bytes;
    if (!plan->pitched) {
      memcpy(to, from, plan->copy_bytes);
      continue;
    }
    const size_t width = static_cast<size_t>(spec.rows) * plan->elem_bytes;
    for (int64_t j = 0; j < spec.cols; ++j) memcpy(to + j * width, from + j * spec.ld * plan->elem_bytes, width);
  }
  std::vector<float> out(plan->packed_bytes / sizeof(float));
  if (plan->staged_dense)
    memcpy(out.data(), staging.data(), plan->packed_bytes);
  else
    PackDense(spec, *plan, staging.data(), reinterpret_cast<char*>(out.data()));
  return out;
}

TensorSpec Spec(const std::vector<float>& mem, int64_t rows, int64_t cols, int64_t ld, int64_t batch = 1,
                int64_t stride = 0) {
  TensorSpec t;
  t.dtype = DType::kF32;
  t.ptr = mem.data();
  t.rows = rows;
  t.cols = cols;
  t.ld = ld;
  t.batch = batch;
  t.batch_stride = stride;
  return t;
}

void ExpectPacked(const std::vector<float>& mem, const TensorSpec& t, const std::vector<float>& out) {
  ASSERT_EQ(out.size(), static_cast<size_t>(t.rows * t.cols * t.batch));
  size_t k = 0;
  for (int64_t b = 0; b < t.batch; ++b)
    for (int64_t j = 0; j < t.cols; ++j)
      for (int64_t i = 0; i < t.rows; ++i, ++k)
        ASSERT_EQ(out[k], mem[b * t.batch_stride + j * t.ld + i]) << "b=" << b << " i=" << i << " j=" << j;
}

std::vector<float> Iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(TensorPackTest, PaddedMatrixCopiesRegionOnly) {
  std::vector<float> mem = Iota(7 * 4);
  TensorSpec t = Spec(mem, 5, 4, 7);
  StagingPlan plan;
  std::vector<float> out = StageAndPack(t, &plan);
  EXPECT_EQ(plan.region_elems, 7u * 3 + 5);
  EXPECT_EQ(plan.copies, 1u);
  EXPECT_EQ(plan.staging_bytes, (7u * 3 + 5) * 4);
  EXPECT_EQ(plan.packed_bytes, 5u * 4 * 4);
  ExpectPacked(mem, t, out);
}

TEST(TensorPackTest, StridedBatchesWithSmallGapsUseOneCopy) {
  std::vector<float> mem = Iota(40 * 3);
  TensorSpec t = Spec(mem, 3, 4, 9, /*batch=*/3, /*stride=*/40);  // region 30, stride 40
  StagingPlan plan;
  std::vector<float> out = StageAndPack(t, &plan);
  EXPECT_EQ(plan.copies, 1u);
  EXPECT_EQ(plan.staged_batch_stride, 40u);
  EXPECT_EQ(plan.staging_bytes, (40u * 2 + 30) * 4);
  ExpectPacked(mem, t, out);
}

// Dense columns (ld == rows) but batches with gaps between them: staged in one copy, then each batch's
// rows x cols block moved whole, every element of every batch.
TEST(TensorPackTest, DenseBatchesWithGapsArePackedWhole) {
  std::vector<float> mem = Iota(14 * 3);
  TensorSpec t = Spec(mem, 3, 4, 3, /*batch=*/3, /*stride=*/14);  // 12 elements per batch, 2 between batches
  StagingPlan plan;
  std::vector<float> out = StageAndPack(t, &plan);
  EXPECT_EQ(plan.copies, 1u);
  EXPECT_EQ(plan.staged_batch_stride, 14u);
  EXPECT_FALSE(plan.staged_dense);
  ExpectPacked(mem, t, out);
}

TEST(TensorPackTest, SparseOrOverlappingBatchesCopyEachBatch) {
  std::vector<float> sparse = Iota(1000 * 2 + 10);
  TensorSpec t = Spec(sparse, 2, 3, 4, /*batch=*/3, /*stride=*/1000);
  StagingPlan plan;
  std::vector<float> out = StageAndPack(t, &plan);
  EXPECT_EQ(plan.copies, 3u);
  EXPECT_EQ(plan.staging_bytes, 3u * 10 * 4);
  ExpectPacked(sparse, t, out);

  std::vector<float> shared = Iota(12);
  TensorSpec broadcast = Spec(shared, 3, 4, 3, /*batch=*/2, /*stride=*/0);  // one matrix used by every batch
  out = StageAndPack(broadcast, &plan);
  EXPECT_EQ(plan.copies, 2u);
  ExpectPacked(shared, broadcast, out);
}

TEST(TensorPackTest, ThinSliceOfAWideMatrixUsesPitchedCopiesOfItsElementsOnly) {
  // 2 rows of a matrix with ld 1000: the region would be 999 * 1000 + 2 elements for 2 * 1000 wanted.
  std::vector<float> mem = Iota(1000 * 1000);
  TensorSpec t = Spec(mem, 2, 1000, 1000, /*batch=*/2, /*stride=*/3);  // batch 1 starts 3 elements on
  StagingPlan plan;
  std::vector<float> out = StageAndPack(t, &plan, /*pitched=*/true);
  EXPECT_TRUE(plan.pitched);
  EXPECT_TRUE(plan.staged_dense);
  EXPECT_EQ(plan.copies, 2u);
  EXPECT_EQ(plan.staging_bytes, plan.packed_bytes);
  EXPECT_EQ(plan.packed_bytes, 2u * 1000 * 2 * 4);
  ExpectPacked(mem, t, out);
  // Without pitched copies: the region, packed afterwards.
  out = StageAndPack(t, &plan, /*pitched=*/false);
  EXPECT_FALSE(plan.pitched);
  EXPECT_FALSE(plan.staged_dense);
  EXPECT_EQ(plan.staging_bytes, 2u * (999u * 1000 + 2) * 4);
  ExpectPacked(mem, t, out);
  // Padding at most half the region: still one region copy, even when pitched copies exist.
  std::vector<float> small = Iota(7 * 4);
  out = StageAndPack(Spec(small, 5, 4, 7), &plan, /*pitched=*/true);
  EXPECT_FALSE(plan.pitched);
  ExpectPacked(small, Spec(small, 5, 4, 7), out);
  // Dense columns and back-to-back batches: staged dense as they are.
  std::vector<float> dense = Iota(24);
  out = StageAndPack(Spec(dense, 3, 4, 3, 2, 12), &plan, /*pitched=*/true);
  EXPECT_TRUE(plan.staged_dense);
  ExpectPacked(dense, Spec(dense, 3, 4, 3, 2, 12), out);
}

TEST(TensorPackTest, RejectsEmptyAndMalformed) {
  std::vector<float> mem(16);
  StagingPlan plan;
  EXPECT_FALSE(PlanStaging(Spec(mem, 0, 4, 1), &plan));
  EXPECT_FALSE(PlanStaging(Spec(mem, 4, 0, 4), &plan));
  EXPECT_FALSE(PlanStaging(Spec(mem, 4, 4, 3), &plan));  // ld < rows
  EXPECT_FALSE(PlanStaging(Spec(mem, 4, 4, 4, 0), &plan));
  EXPECT_FALSE(PlanStaging(Spec(mem, 4, 4, 4, 2, -16), &plan));
  TensorSpec null_ptr = Spec(mem, 4, 4, 4);
  null_ptr.ptr = nullptr;
  EXPECT_FALSE(PlanStaging(null_ptr, &plan));
  TensorSpec bad_type = Spec(mem, 4, 4, 4);
  bad_type.dtype = DType::kInvalid;
  EXPECT_FALSE(PlanStaging(bad_type, &plan));
  TensorSpec huge = Spec(mem, 1, INT64_MAX / 2, INT64_MAX / 2);
  EXPECT_FALSE(PlanStaging(huge, &plan));
}

TEST(TensorPackTest, TwoByteElements) {
  std::vector<uint16_t> mem(6 * 3);
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<uint16_t>(1000 + i);
  TensorSpec t;
  t.dtype = DType::kBF16;
  t.ptr = mem.data();
  t.rows = 4;
  t.cols = 3;
  t.ld = 6;
  StagingPlan plan;
  ASSERT_TRUE(PlanStaging(t, &plan));
  EXPECT_EQ(plan.elem_bytes, 2u);
  std::vector<char> staging(plan.staging_bytes);
  memcpy(staging.data(), mem.data(), plan.copy_bytes);
  std::vector<uint16_t> out(12);
  PackDense(t, plan, staging.data(), reinterpret_cast<char*>(out.data()));
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[j * 4 + i], mem[j * 6 + i]);
}

TEST(TensorPackTest, DTypeMappings) {
  EXPECT_EQ(DTypeFromCuda(CUDA_R_32F), DType::kF32);
  EXPECT_EQ(DTypeFromCuda(CUDA_R_16F), DType::kF16);
  EXPECT_EQ(DTypeFromCuda(CUDA_R_16BF), DType::kBF16);
  EXPECT_EQ(DTypeFromCuda(CUDA_R_8F_E4M3), DType::kE4M3);
  EXPECT_EQ(DTypeFromCuda(CUDA_C_32F), DType::kInvalid);
  EXPECT_EQ(DTypeFromNccl(ncclFloat32), DType::kF32);
  EXPECT_EQ(DTypeFromNccl(ncclBfloat16), DType::kBF16);
  EXPECT_EQ(DTypeFromNccl(ncclInt64), DType::kI64);
  EXPECT_EQ(DTypeFromNccl(ncclNumTypes), DType::kInvalid);
}

}  // namespace
}  // namespace ttrace::shim
