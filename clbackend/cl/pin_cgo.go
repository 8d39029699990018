//go:build cgo && !noopencl && linux

package cl

/*
#cgo linux LDFLAGS: -ldl
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The load addresses of the kernel binaries clinfer_pin_kernels pinned:
// an open-addressing set (0 marks a free slot). A pinned object is never
// unloaded, so its address names it for the life of the process.
static uintptr_t *clinfer_pinned;
static size_t clinfer_pinned_cap, clinfer_pinned_n;

static int clinfer_pinned_has(uintptr_t a) {
	if (clinfer_pinned_cap == 0) return 0;
	for (size_t i = (a >> 12) % clinfer_pinned_cap;; i = (i + 1) % clinfer_pinned_cap) {
		if (clinfer_pinned[i] == 0) return 0;
		if (clinfer_pinned[i] == a) return 1;
	}
}

static int clinfer_pinned_add(uintptr_t a) {
	if (2 * (clinfer_pinned_n + 1) > clinfer_pinned_cap) {
		size_t cap = clinfer_pinned_cap ? 2 * clinfer_pinned_cap : 256;
		uintptr_t *n = calloc(cap, sizeof *n);
		if (n == NULL) return 0;
		uintptr_t *old = clinfer_pinned;
		size_t oldcap = clinfer_pinned_cap;
		clinfer_pinned = n;
		clinfer_pinned_cap = cap;
		clinfer_pinned_n = 0;
		for (size_t i = 0; i < oldcap; i++) {
			if (old[i] != 0) clinfer_pinned_add(old[i]);
		}
		free(old);
	}
	size_t i = (a >> 12) % clinfer_pinned_cap;
	while (clinfer_pinned[i] != 0) i = (i + 1) % clinfer_pinned_cap;
	clinfer_pinned[i] = a;
	clinfer_pinned_n++;
	return 1;
}

// A kernel binary of POCL's CPU drivers: a shared object in a work-group
// function folder of its kernel cache (".../<kernel>/16-1-1-goffs0-smallgrid/<kernel>.so").
static int clinfer_is_kernel_binary(const char *name) {
	size_t n = name ? strlen(name) : 0;
	return n > 3 && strcmp(name + n - 3, ".so") == 0 && strstr(name, "-goffs") != NULL;
}

typedef struct { char **names; uintptr_t *addrs; size_t n, cap; } clinfer_found;

static int clinfer_collect(struct dl_phdr_info *info, size_t size, void *data) {
	clinfer_found *f = data;
	if (!clinfer_is_kernel_binary(info->dlpi_name) || clinfer_pinned_has(info->dlpi_addr) || f->n == f->cap) {
		return 0;
	}
	char *s = strdup(info->dlpi_name);
	if (s != NULL) {
		f->names[f->n] = s;
		f->addrs[f->n] = info->dlpi_addr;
		f->n++;
	}
	return 0;
}

// clinfer_pin_kernels takes one more reference (dlopen RTLD_NOLOAD) on
// every kernel binary loaded now and not pinned before, so that POCL's
// dlclose of an evicted work-group function leaves it loaded and its next
// dlopen finds it in memory. It returns how many it pinned in all.
static size_t clinfer_pin_kernels(void) {
	enum { batch = 1024 };
	char *names[batch];
	uintptr_t addrs[batch];
	clinfer_found f = {names, addrs, 0, batch};
	dl_iterate_phdr(clinfer_collect, &f);
	for (size_t i = 0; i < f.n; i++) {
		// Outside dl_iterate_phdr, which holds the loader's lock.
		if (!clinfer_pinned_has(addrs[i]) && dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD) != NULL) {
			clinfer_pinned_add(addrs[i]);
		}
		free(names[i]);
	}
	return clinfer_pinned_n;
}
*/
import "C"

import "sync"

// pinMu serializes PinKernelBinaries (the set of pinned binaries is C's).
var pinMu sync.Mutex

// PinKernelBinaries keeps every kernel binary that POCL's CPU drivers
// have loaded so far loaded for the life of the process, and returns how
// many it holds. POCL 3.1 keeps at most 128 work-group functions loaded
// (common.c, MAX_CACHE_ITEMS) and evicts, with dlclose, the least
// recently used of those no command holds; the pthread driver's never
// qualify (each of its launches takes two references and drops one), so
// in a process with many compiled models the basic device's functions
// are evicted and loaded again, from the file, at every launch. Pinned,
// such a reload finds the binary in memory: no open, no mapping, no
// relocation, only POCL's own bookkeeping. A binary is a few kilobytes
// to a few hundred; pinned ones are never unloaded.
func PinKernelBinaries() int {
	pinMu.Lock()
	defer pinMu.Unlock()
	return int(C.clinfer_pin_kernels())
}
