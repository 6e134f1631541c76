// The stand-in libcublasLt.so.13 (status_standin.h): cublasLtMatmul answers STANDIN_CUBLAS_STATUS; handles and
// the matmul and layout descriptors (which the shim reads with their getters) are simgpu's.
#include <cstddef>
#include <cstdint>

#include "shim/testing/status_standin.h"

#define STANDIN_LT_FORWARD(name, params, args)                                                   \
  extern "C" int name params {                                                                  \
    static auto real = reinterpret_cast<int(*) params>(                                         \
        standin::Simgpu("libcublasLt.so.13", "libcublasLt.so.13", #name));                      \
    return real args;                                                                            \
  }

STANDIN_LT_FORWARD(cublasLtCreate, (void** handle), (handle))
STANDIN_LT_FORWARD(cublasLtDestroy, (void* handle), (handle))
STANDIN_LT_FORWARD(cublasLtMatmulDescCreate, (void** desc, int compute, int scale), (desc, compute, scale))
STANDIN_LT_FORWARD(cublasLtMatmulDescDestroy, (void* desc), (desc))
STANDIN_LT_FORWARD(cublasLtMatmulDescSetAttribute, (void* desc, int attr, const void* buf, size_t size),
                   (desc, attr, buf, size))
STANDIN_LT_FORWARD(cublasLtMatmulDescGetAttribute, (void* desc, int attr, void* buf, size_t size, size_t* written),
                   (desc, attr, buf, size, written))
STANDIN_LT_FORWARD(cublasLtMatrixLayoutCreate, (void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld),
                   (layout, type, rows, cols, ld))
STANDIN_LT_FORWARD(cublasLtMatrixLayoutDestroy, (void* layout), (layout))
STANDIN_LT_FORWARD(cublasLtMatrixLayoutSetAttribute, (void* layout, int attr, const void* buf, size_t size),
                   (layout, attr, buf, size))
STANDIN_LT_FORWARD(cublasLtMatrixLayoutGetAttribute,
                   (void* layout, int attr, void* buf, size_t size, size_t* written), (layout, attr, buf, size, written))

STANDIN_ANSWER(cublasLtMatmul, "STANDIN_CUBLAS_STATUS")
