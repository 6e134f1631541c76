// descriptor_probe: prints a transcript of how the libcublasLt.so.13 it is loaded with answers the host-side API
// (status strings, versions, descriptor creation, every attribute's size, default and getter/setter behaviour, NULL
// arguments). NVIDIA's library answers all of these without a GPU, so the simgpu.CublasLt.DescriptorsMatchNvidia
// test runs this program once on NVIDIA's library and once on simgpu's and requires identical transcripts. The first
// line names the library file that was loaded and is not compared.
//
// Only calls that NVIDIA's library survives are made (it crashes, for instance, on a NULL descriptor passed to
// cublasLtMatmulDescInit_internal).
#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

// Getter behaviour of one attribute: the size query, the default value, and the error cases.
template <typename Desc, typename Attr, typename Get>
void ProbeGet(const char* kind, Desc desc, int attr, Get get) {
  size_t written = 777;
  int query = get(desc, static_cast<Attr>(attr), nullptr, 0, &written);
  printf("%s get %d: query %d size %zu", kind, attr, query, query == 0 ? written : 0);
  if (query == 0) {
    const size_t n = written;
    unsigned char buf[16];
    memset(buf, 0xab, sizeof buf);
    written = 777;
    int st = get(desc, static_cast<Attr>(attr), buf, n, &written);
    printf(" | get %d written %zu value", st, written);
    for (size_t i = 0; i < n; ++i) printf(" %02x", buf[i]);
    written = 777;
    st = get(desc, static_cast<Attr>(attr), buf, n + 1, &written);
    printf(" | larger %d written %zu", st, written);
    if (n > 1) {
      written = 777;
      st = get(desc, static_cast<Attr>(attr), buf, n - 1, &written);
      printf(" | smaller %d written %zu", st, written);
    }
    written = 777;
    st = get(desc, static_cast<Attr>(attr), nullptr, n, &written);
    printf(" | null buffer %d written %zu", st, written);
    printf(" | null sizeWritten %d", get(desc, static_cast<Attr>(attr), buf, n, nullptr));
    printf(" | query without sizeWritten %d", get(desc, static_cast<Attr>(attr), nullptr, 0, nullptr));
  }
  printf("\n");
}

// Setter behaviour of one attribute: wrong sizes, NULL buffer, and a few values read back.
template <typename Desc, typename Attr, typename Get, typename Set>
void ProbeSet(const char* kind, Desc desc, int attr, Get get, Set set) {
  size_t n = 0;
  if (get(desc, static_cast<Attr>(attr), nullptr, 0, &n) != 0) {
    uint64_t zero = 0;
    printf("%s set %d (unknown): %d\n", kind, attr, set(desc, static_cast<Attr>(attr), &zero, 4));
    return;
  }
  unsigned char saved[16];
  size_t written;
  get(desc, static_cast<Attr>(attr), saved, n, &written);
  printf("%s set %d: larger %d smaller %d null %d", kind, attr, set(desc, static_cast<Attr>(attr), saved, n + 1),
         set(desc, static_cast<Attr>(attr), saved, n - 1), set(desc, static_cast<Attr>(attr), nullptr, n));
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{16}}) {
    unsigned char back[16];
    memset(back, 0xcd, sizeof back);
    int st = set(desc, static_cast<Attr>(attr), &v, n);
    get(desc, static_cast<Attr>(attr), back, n, &written);
    printf(" | %llu: %d ->", static_cast<unsigned long long>(v), st);
    for (size_t i = 0; i < n; ++i) printf(" %02x", back[i]);
  }
  set(desc, static_cast<Attr>(attr), saved, n);
  printf("\n");
}

void ProbeMatmulDesc() {
  const int computes[] = {CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC,
                          CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_32I, 0, 999};
  const int scales[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_64F, CUDA_R_16BF, CUDA_C_32F, 999};
  for (int c : computes) {
    for (int s : scales) {
      cublasLtMatmulDesc_t d = nullptr;
      int st = cublasLtMatmulDescCreate(&d, static_cast<cublasComputeType_t>(c), static_cast<cudaDataType_t>(s));
      int32_t back[2] = {-7, -7};
      size_t w;
      if (d != nullptr) {
        cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &back[0], 4, &w);
        cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &back[1], 4, &w);
      }
      printf("matmul desc create compute %d scale %d: %d %s compute %d scale %d\n", c, s, st, d ? "desc" : "null",
             back[0], back[1]);
      cublasLtMatmulDescDestroy(d);
    }
  }
  printf("matmul desc create null: %d destroy null: %d\n",
         cublasLtMatmulDescCreate(nullptr, CUBLAS_COMPUTE_32F, CUDA_R_32F), cublasLtMatmulDescDestroy(nullptr));
  cublasLtMatmulDesc_t d;
  cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  for (int a = 0; a < 42; ++a) {
    ProbeGet<cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t>("matmul desc", d, a,
                                                                    cublasLtMatmulDescGetAttribute);
  }
  for (int a = 0; a < 42; ++a) {
    if (a == CUBLASLT_MATMUL_DESC_SCALE_TYPE) continue;  // probed below: NVIDIA's setter has state
    ProbeSet<cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t>(
        "matmul desc", d, a, cublasLtMatmulDescGetAttribute, cublasLtMatmulDescSetAttribute);
  }
  for (int32_t v : {CUDA_R_16F, CUDA_R_64F, CUDA_R_32F}) {
    int32_t back = -7;
    size_t w;
    int st = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &v, 4);
    cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &back, 4, &w);
    printf("matmul desc scale type %d: %d -> %d\n", v, st, back);
  }
  int32_t x = 0;
  size_t w = 0;
  printf("matmul desc null: get %d set %d\n",
         cublasLtMatmulDescGetAttribute(nullptr, CUBLASLT_MATMUL_DESC_TRANSA, &x, 4, &w),
         cublasLtMatmulDescSetAttribute(nullptr, CUBLASLT_MATMUL_DESC_TRANSA, &x, 4));
  cublasLtMatmulDescDestroy(d);
  cublasLtMatmulDescOpaque_t storage;
  printf("matmul desc init: short %d exact %d longer %d\n",
         cublasLtMatmulDescInit_internal(&storage, 8, CUBLAS_COMPUTE_32F, CUDA_R_32F),
         cublasLtMatmulDescInit_internal(&storage, sizeof storage, CUBLAS_COMPUTE_32F, CUDA_R_32F),
         cublasLtMatmulDescInit_internal(&storage, sizeof storage + 8, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  ProbeGet<cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t>("matmul desc init", &storage,
                                                                  CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                                  cublasLtMatmulDescGetAttribute);
}

void ProbeLayout() {
  struct Args {
    int type;
    uint64_t rows, cols;
    int64_t ld;
  };
  const Args cases[] = {{CUDA_R_32F, 4, 3, 4}, {CUDA_R_32F, 4, 3, 2}, {CUDA_R_32F, 0, 0, 0},
                        {CUDA_R_16F, 4, 3, -1}, {999, 4, 3, 4}, {CUDA_R_8F_E4M3, 16, 16, 16}};
  for (const Args& c : cases) {
    cublasLtMatrixLayout_t l = nullptr;
    int st = cublasLtMatrixLayoutCreate(&l, static_cast<cudaDataType>(c.type), c.rows, c.cols, c.ld);
    printf("layout create %d %llu %llu %lld: %d %s\n", c.type, static_cast<unsigned long long>(c.rows),
           static_cast<unsigned long long>(c.cols), static_cast<long long>(c.ld), st, l ? "desc" : "null");
    cublasLtMatrixLayoutDestroy(l);
  }
  printf("layout create null: %d destroy null: %d\n", cublasLtMatrixLayoutCreate(nullptr, CUDA_R_32F, 1, 1, 1),
         cublasLtMatrixLayoutDestroy(nullptr));
  cublasLtMatrixLayout_t l;
  cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 5, 7, 8);
  for (int a = 0; a < 12; ++a) {
    ProbeGet<cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t>("layout", l, a,
                                                                       cublasLtMatrixLayoutGetAttribute);
  }
  for (int a = 0; a < 12; ++a) {
    ProbeSet<cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t>(
        "layout", l, a, cublasLtMatrixLayoutGetAttribute, cublasLtMatrixLayoutSetAttribute);
  }
  int64_t x = 0;
  size_t w = 0;
  printf("layout null: get %d set %d init %d\n",
         cublasLtMatrixLayoutGetAttribute(nullptr, CUBLASLT_MATRIX_LAYOUT_LD, &x, 8, &w),
         cublasLtMatrixLayoutSetAttribute(nullptr, CUBLASLT_MATRIX_LAYOUT_LD, &x, 8),
         cublasLtMatrixLayoutInit_internal(nullptr, sizeof(cublasLtMatrixLayoutOpaque_t), CUDA_R_32F, 1, 1, 1));
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatrixLayoutOpaque_t storage;
  printf("layout init: short %d exact %d\n", cublasLtMatrixLayoutInit_internal(&storage, 8, CUDA_R_32F, 1, 1, 1),
         cublasLtMatrixLayoutInit_internal(&storage, sizeof storage, CUDA_R_32F, 2, 3, 4));
  ProbeGet<cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t>("layout init", &storage,
                                                                     CUBLASLT_MATRIX_LAYOUT_COLS,
                                                                     cublasLtMatrixLayoutGetAttribute);
}

void ProbePreference() {
  cublasLtMatmulPreference_t p = nullptr;
  printf("preference create %d null %d destroy null %d\n", cublasLtMatmulPreferenceCreate(&p),
         cublasLtMatmulPreferenceCreate(nullptr), cublasLtMatmulPreferenceDestroy(nullptr));
  for (int a = 0; a < 16; ++a) {
    ProbeGet<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t>(
        "preference", p, a, cublasLtMatmulPreferenceGetAttribute);
  }
  for (int a = 0; a < 16; ++a) {
    ProbeSet<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t>(
        "preference", p, a, cublasLtMatmulPreferenceGetAttribute, cublasLtMatmulPreferenceSetAttribute);
  }
  uint64_t x = 0;
  size_t w = 0;
  printf("preference null: get %d set %d init %d\n",
         cublasLtMatmulPreferenceGetAttribute(nullptr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &x, 8, &w),
         cublasLtMatmulPreferenceSetAttribute(nullptr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &x, 8),
         cublasLtMatmulPreferenceInit_internal(nullptr, sizeof(cublasLtMatmulPreferenceOpaque_t)));
  cublasLtMatmulPreferenceOpaque_t storage;
  printf("preference init: short %d exact %d\n", cublasLtMatmulPreferenceInit_internal(&storage, 8),
         cublasLtMatmulPreferenceInit_internal(&storage, sizeof storage));
  cublasLtMatmulPreferenceDestroy(p);
}

// A zeroed cublasLtMatmulAlgo_t's configuration attributes (the struct is the application's).
void ProbeAlgoConfig() {
  cublasLtMatmulAlgo_t algo;
  memset(&algo, 0, sizeof algo);
  auto get = [](cublasLtMatmulAlgo_t* a, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t size,
                size_t* written) { return cublasLtMatmulAlgoConfigGetAttribute(a, attr, buf, size, written); };
  for (int a = 0; a < 16; ++a) {
    ProbeGet<cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t>("algo config", &algo, a, get);
  }
  for (int a = 0; a < 16; ++a) {
    ProbeSet<cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t>("algo config", &algo, a, get,
                                                                          cublasLtMatmulAlgoConfigSetAttribute);
  }
}

// Handle-taking calls with a NULL handle (a real handle needs a GPU on NVIDIA's library).
void ProbeNullHandle() {
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t l;
  cublasLtMatmulPreference_t p;
  cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 2, 2, 2);
  cublasLtMatmulPreferenceCreate(&p);
  cublasLtMatmulHeuristicResult_t results[2];
  int count = -5;
  float one = 1.0f;
  printf("null handle: heuristic %d count %d", cublasLtMatmulAlgoGetHeuristic(nullptr, d, l, l, l, l, p, 2, results,
                                                                              &count),
         count);
  printf(" matmul %d destroy %d create(NULL) %d\n",
         cublasLtMatmul(nullptr, d, &one, nullptr, l, nullptr, l, &one, nullptr, l, nullptr, l, nullptr, nullptr, 0,
                        nullptr),
         cublasLtDestroy(nullptr), cublasLtCreate(nullptr));
  cublasLtMatmulPreferenceDestroy(p);
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(d);
}

}  // namespace

int main() {
  Dl_info info;
  printf("library: %s\n", dladdr(reinterpret_cast<void*>(&cublasLtMatmul), &info) ? info.dli_fname : "?");
  printf("version %zu cudart %zu\n", cublasLtGetVersion(), cublasLtGetCudartVersion());
  for (int t = 0; t < 4; ++t) {
    int v = -1;
    int st = cublasLtGetProperty(static_cast<libraryPropertyType>(t), &v);
    printf("property %d: %d value %d\n", t, st, v);
  }
  printf("property null: %d\n", cublasLtGetProperty(MAJOR_VERSION, nullptr));
  for (int s = 0; s < 20; ++s) {
    printf("status %d: %s / %s\n", s, cublasLtGetStatusName(static_cast<cublasStatus_t>(s)),
           cublasLtGetStatusString(static_cast<cublasStatus_t>(s)));
  }
  ProbeMatmulDesc();
  ProbeLayout();
  ProbePreference();
  ProbeAlgoConfig();
  ProbeNullHandle();
  return 0;
}
