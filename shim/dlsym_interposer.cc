// dlsym as programs that load vendor libraries at run time see it (JAX/XLA, launchers: dlopen(RTLD_LOCAL), then
// dlsym(handle, "cublasGemmEx")): such a lookup bypasses LD_PRELOAD, so libttrace.so exports dlsym itself, as
// glibc's two versions (dlsym@GLIBC_2.2.5, dlsym@@GLIBC_2.34; the version script lists them), and answers a
// lookup in a library handle of a symbol apis.inc lists with the shim's own export for the version the handle
// would have given (cublasGemmEx@libcublas.so.12 from a cuBLAS 12 handle). Everything else goes to glibc's dlsym.
//
// Why a tail jump: glibc resolves RTLD_NEXT (and the caller's namespace) from dlsym's return address. A wrapper
// that called the real dlsym would make every RTLD_NEXT lookup in the process relative to libttrace.so and break
// other interposers. So dlsym is an assembly trampoline: it asks DlsymRedirect (a C++ function) whether to answer
// and otherwise jumps, not calls, to glibc's dlsym with the application's return address still on the stack.
// x86-64 only; elsewhere dlsym is not interposed (the version script's names then match nothing).
//
// The shim's own lookups (interception.cc) call glibc's dlsym directly (RealDlsym), never this one: a vendor
// handle must give the vendor's function there. dlvsym is not interposed. The CUDA driver's cuGetProcAddress
// needs no interposer: the shim intercepts no driver entry point.
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <string>

#include "shim/interception.h"

// glibc's dlsym, set by RealDlsym (interception.cc); the trampoline jumps through it.
extern "C" void* ttrace_real_dlsym_slot;

namespace ttrace::shim {
namespace {

std::atomic<void*> g_self{nullptr};  // libttrace.so's handle

int RuntimeApiIndex(const char* name) {
  for (size_t i = 0; i < sizeof(format::kApis) / sizeof(format::kApis[0]); ++i)
    if (strcmp(format::kApis[i].symbol, name) == 0) return static_cast<int>(i);
  return -1;
}

void* Self() {
  void* self = g_self.load(std::memory_order_acquire);
  if (self != nullptr) return self;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&RuntimeApiIndex), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);  // a reference held for the process's life
  g_self.store(self, std::memory_order_release);
  return self;
}

bool IsOurs(void* fn) {
  Dl_info mine, theirs;
  return dladdr(reinterpret_cast<void*>(&RuntimeApiIndex), &mine) != 0 && dladdr(fn, &theirs) != 0 &&
         mine.dli_fbase == theirs.dli_fbase;
}

}  // namespace

// Our export of `name` for the version of its library that `handle` gives, or nullptr (then glibc answers).
extern "C" __attribute__((visibility("hidden"))) void* ttrace_DlsymRedirect(void* handle, const char* name) {
  if (__atomic_load_n(&ttrace_real_dlsym_slot, __ATOMIC_ACQUIRE) == nullptr) RealDlsym(RTLD_DEFAULT, "dlsym");
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || name == nullptr) return nullptr;
  const int api = RuntimeApiIndex(name);
  if (api < 0) return nullptr;
  const format::Library library = format::kApis[api].library;
  void* vendor = RealDlsym(handle, name);
  if (vendor == nullptr || IsOurs(vendor)) return nullptr;
  void* self = Self();
  if (self == nullptr) return nullptr;
  if (!VendorVersioned(library)) return RealDlsym(self, name);
  for (int v = 0; v < kMaxVendorVersions; ++v) {
    const char* node = VendorSoname(library, v);
    if (node != nullptr && dlvsym(handle, name, node) == vendor) return dlvsym(self, name, node);
  }
  return nullptr;  // a version the shim does not know: the vendor's, uncaptured
}

}  // namespace ttrace::shim

#if defined(__x86_64__)
// dlsym(handle, name): rdi, rsi. Saved across the call (and the stack kept 16-byte aligned for it); a non-null
// answer is returned, else the jump to glibc's dlsym, whose pointer DlsymRedirect has resolved.
asm(R"(
  .text
  .p2align 4
  .type ttrace_dlsym_trampoline, @function
ttrace_dlsym_trampoline:
  pushq %rdi
  pushq %rsi
  subq $8, %rsp
  call ttrace_DlsymRedirect
  addq $8, %rsp
  popq %rsi
  popq %rdi
  testq %rax, %rax
  jnz 1f
  jmp *ttrace_real_dlsym_slot(%rip)
1:
  ret
  .size ttrace_dlsym_trampoline, .-ttrace_dlsym_trampoline
  .globl ttrace_dlsym_new
  .globl ttrace_dlsym_old
  .set ttrace_dlsym_new, ttrace_dlsym_trampoline
  .set ttrace_dlsym_old, ttrace_dlsym_trampoline
  .symver ttrace_dlsym_new, dlsym@@GLIBC_2.34
  .symver ttrace_dlsym_old, dlsym@GLIBC_2.2.5
)");
#endif
