/* glibc228_shim.c - definitions of glibc >= 2.29 symbols that the static
 * libstdc++.a / libgcc_eh.a of GCC 12 (built against glibc 2.36) reference,
 * implemented over what glibc 2.28 exports. Linked into the self-contained
 * libappstoreserver.so; every symbol here is hidden (never exported).
 *
 * stat/fstat/lstat/fstatat (2.33) are NOT here: zig's 2.28 libc_nonshared.a
 * already provides them as wrappers over __xstat & co.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* glibc 2.32. libstdc++ reads it to skip atomics when the process has only
 * one thread. 0 = "may be multi-threaded": always correct, just never takes
 * the single-thread fast path. */
HIDDEN char __libc_single_threaded = 0;

/* glibc 2.35. GCC 12's _Unwind_Find_FDE calls this for every frame not
 * registered via __register_frame_info and, if it fails, returns NULL with
 * NO dl_iterate_phdr fallback - so "return -1" would make every C++ throw
 * std::terminate. Emulate it with dl_iterate_phdr (GLIBC_2.2.5). */
#ifndef DLFO_STRUCT_HAS_EH_DBASE   /* headers older than glibc 2.35 */
struct dl_find_object {            /* layout of glibc 2.35+ <dlfcn.h>, x86_64 */
  unsigned long long int dlfo_flags;
  void *dlfo_map_start;
  void *dlfo_map_end;
  struct link_map *dlfo_link_map;
  void *dlfo_eh_frame;             /* start of PT_GNU_EH_FRAME (.eh_frame_hdr) */
  unsigned long long int __dflo_reserved[7];
};
#endif

struct find_ctx { uintptr_t pc; struct dl_find_object *out; };

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  struct find_ctx *ctx = arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  const ElfW(Phdr) *eh = NULL;
  int hit = 0;
  (void)size;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD) {
      uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
      if (ctx->pc >= s && ctx->pc < e) hit = 1;
      s &= ~(uintptr_t)4095;
      if (s < lo) lo = s;
      if (e > hi) hi = e;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh = ph;
    }
  }
  if (!hit) return 0;
  ctx->out->dlfo_flags = 0;
  ctx->out->dlfo_map_start = (void *)lo;
  ctx->out->dlfo_map_end = (void *)hi;
  ctx->out->dlfo_link_map = NULL;  /* unused by libgcc */
  ctx->out->dlfo_eh_frame = eh ? (void *)(info->dlpi_addr + eh->p_vaddr) : NULL;
  return 1;
}

HIDDEN int _dl_find_object(void *pc, struct dl_find_object *result) {
  struct find_ctx ctx = { (uintptr_t)pc, result };
  return dl_iterate_phdr(find_cb, &ctx) > 0 ? 0 : -1;
}
