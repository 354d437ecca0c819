// See include/CMallocCounter.h. glibc >= 2.x exports __libc_malloc and friends, so forwarding
// needs no dlsym (which itself allocates) and no recursion guard.
#define _GNU_SOURCE
#include "CMallocCounter.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <execinfo.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static uint64_t allocations;
static uint64_t allocated_bytes;
static uint64_t frees;

static int trace_remaining;
static int in_trace;

// Writes the caller's stack to stderr (addresses as binary(+offset): addr2line -f -e BINARY
// OFFSET | swift demangle names them). backtrace_symbols_fd does not allocate.
static void trace(size_t n) {
    if (trace_remaining <= 0 || in_trace) return;
    in_trace = 1;
    trace_remaining--;
    void *frames[24];
    int k = backtrace(frames, 24);
    char line[64];
    int len = 0;
    const char *head = "--- allocation of ";
    while (head[len]) { line[len] = head[len]; len++; }
    char digits[24];
    int d = 0;
    do { digits[d++] = (char)('0' + n % 10); n /= 10; } while (n && d < 20);
    while (d) line[len++] = digits[--d];
    line[len++] = '\n';
    (void)!write(2, line, (size_t)len);
    backtrace_symbols_fd(frames, k, 2);
    in_trace = 0;
}

static inline void counted(size_t n) {
    __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&allocated_bytes, (uint64_t)n, __ATOMIC_RELAXED);
    if (__builtin_expect(trace_remaining > 0, 0)) trace(n);
}

void bench_trace_allocations(int count) {
    if (count > 0) {
        // backtrace() loads libgcc on its first call, which allocates: do that first.
        void *frames[2];
        in_trace = 1;
        backtrace(frames, 2);
        in_trace = 0;
    }
    trace_remaining = count;
}

void *malloc(size_t n) {
    counted(n);
    return __libc_malloc(n);
}

void *calloc(size_t count, size_t n) {
    counted(count * n);
    return __libc_calloc(count, n);
}

void *realloc(void *p, size_t n) {
    // Growing or shrinking in place is still a call into the allocator: count it.
    counted(n);
    return __libc_realloc(p, n);
}

void free(void *p) {
    if (p) __atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}

void *memalign(size_t alignment, size_t n) {
    counted(n);
    return __libc_memalign(alignment, n);
}

void *aligned_alloc(size_t alignment, size_t n) {
    counted(n);
    return __libc_memalign(alignment, n);
}

int posix_memalign(void **out, size_t alignment, size_t n) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted(n);
    void *p = __libc_memalign(alignment, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

uint64_t bench_allocations(void) { return __atomic_load_n(&allocations, __ATOMIC_RELAXED); }
uint64_t bench_allocated_bytes(void) { return __atomic_load_n(&allocated_bytes, __ATOMIC_RELAXED); }
uint64_t bench_frees(void) { return __atomic_load_n(&frees, __ATOMIC_RELAXED); }

void bench_deliberate_allocation(uint64_t bytes) {
    // volatile: the compiler may not elide the pair.
    void *volatile p = malloc((size_t)bytes);
    free(p);
}

int bench_counter_is_interposed(void) {
    uint64_t before = bench_allocations();
    bench_deliberate_allocation(24);
    return bench_allocations() > before ? 1 : 0;
}
