// How interceptors find the vendor's functions (interception.h): through RTLD_NEXT, through dlopen(RTLD_NOLOAD)
// when the library was loaded RTLD_LOCAL (as Python loads it), NCCL through its strong pnccl* aliases; and what an
// interceptor does when the library is not there at all.
#include <cublas_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <string>

#include "gtest/gtest.h"
#include "shim/interception.h"

namespace ttrace::shim {
namespace {

const std::string kSimgpu = TTRACE_SIMGPU_LIBDIR;
const std::string kShim = TTRACE_SHIM_LIB;

// Runs first in a fresh process (death-test child): nothing of CUDA is loaded there.
TEST(ResolveDeathTest, UnresolvedInterceptorReturnsNotInitialized) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* shim = dlopen(kShim.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (shim == nullptr) _exit(10);
        auto sgemm = reinterpret_cast<decltype(&cublasSgemm_v2)>(dlsym(shim, "cublasSgemm_v2"));
        auto allreduce = reinterpret_cast<decltype(&ncclAllReduce)>(dlsym(shim, "ncclAllReduce"));
        if (sgemm == nullptr || allreduce == nullptr) _exit(11);
        const float one = 1;
        const cublasStatus_t s1 = sgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, 1, nullptr, 1,
                                        &one, nullptr, 1);
        const cublasStatus_t s2 = sgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, 1, nullptr, 1,
                                        &one, nullptr, 1);
        const ncclResult_t r = allreduce(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, nullptr);
        _exit(s1 == CUBLAS_STATUS_NOT_INITIALIZED && s2 == s1 && r == ncclInternalError ? 0 : 12);
      },
      ::testing::ExitedWithCode(0),
      "cannot find the real cublasSgemm_v2.*\n.*cannot find the real ncclAllReduce");
}

TEST(ResolveTest, FindsLibrariesLoadedLocally) {
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasSgemm_v2"), nullptr) << "cuBLAS already loaded?";
  void* cublas = dlopen((kSimgpu + "/libcublas.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cublas, nullptr) << dlerror();
  void* want = dlvsym(cublas, "cublasSgemm_v2", "libcublas.so.13");
  ASSERT_NE(want, nullptr);
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasSgemm_v2"), want);
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasNoSuchFunction"), nullptr);

  void* nccl = dlopen((kSimgpu + "/libnccl.so.2").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  void* strong = dlsym(nccl, "pncclAllReduce");
  ASSERT_NE(strong, nullptr);
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kNccl, "ncclAllReduce"), strong);

  LazySymbol lazy(format::Library::kNccl, "ncclGroupEnd");
  EXPECT_EQ(lazy.Get(), dlsym(nccl, "pncclGroupEnd"));
  EXPECT_EQ(lazy.Get(), lazy.Get());
}

// The caller's version node comes first; a wrapper whose own major is not loaded finds the other one.
TEST(ResolveTest, EachVersionNodeResolvesToItsOwnMajor) {
  void* standin = dlopen((std::string(TTRACE_CUBLAS12_DIR) + "/libcublas.so.12").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(standin, nullptr) << dlerror();
  void* gemm12 = dlvsym(standin, "cublasGemmEx", "libcublas.so.12");
  ASSERT_NE(gemm12, nullptr);
  void* cublas13 = dlopen((kSimgpu + "/libcublas.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cublas13, nullptr) << dlerror();
  void* gemm13 = dlvsym(cublas13, "cublasGemmEx", "libcublas.so.13");
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasGemmEx", 1), gemm12);
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasGemmEx", 0), gemm13);
  // Only in cuBLAS 13 (the stand-in has no _64 forms): the cuBLAS 12 wrapper still finds a definition.
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasGemmEx_64", 1),
            dlvsym(cublas13, "cublasGemmEx_64", "libcublas.so.13"));
  EXPECT_EQ(ResolveVendorSymbol(format::Library::kCublas, "cublasGemmEx", 2), nullptr) << "no third version";
  LazySymbol lazy(format::Library::kCublas, "cublasGemmEx");
  EXPECT_EQ(lazy.Get(1), gemm12);
  EXPECT_EQ(lazy.Get(0), gemm13);
  EXPECT_EQ(lazy.Get(kMaxVendorVersions), nullptr);
}

TEST(ResolveTest, ApiListLookupsAtCompileTime) {
  static_assert(ApiIndex("cublasGemmEx") >= 0);
  static_assert(ApiIndex("cublasSgemm") < 0, "header names are not exported names");
  static_assert(ApiLibrary("ncclAllReduce") == format::Library::kNccl);
  static_assert(ApiLibrary("cublasSgemm_v2_64") == format::Library::kCublas);
  EXPECT_EQ(ApiIndex("nope"), -1);
}

}  // namespace
}  // namespace ttrace::shim
