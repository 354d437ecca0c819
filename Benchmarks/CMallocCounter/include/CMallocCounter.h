// Heap allocation counter for the benchmarks (docs/performance.md). Linking this target into an
// executable replaces malloc, calloc, realloc, free, posix_memalign, aligned_alloc and memalign
// for the whole process (the executable's definitions come first in symbol lookup); each call is
// counted and forwarded to glibc's own allocator (__libc_malloc and friends). Link it only into
// benchmarks, never into the device.
#ifndef CMALLOCCOUNTER_H
#define CMALLOCCOUNTER_H
#include <stdint.h>

/// Allocations so far (malloc, calloc, realloc of NULL or to a new block, the aligned ones).
uint64_t bench_allocations(void);
/// Bytes requested by those allocations.
uint64_t bench_allocated_bytes(void);
/// free() calls with a non-NULL pointer.
uint64_t bench_frees(void);
/// 1 when this counter is the process's malloc (allocations are being counted), else 0.
int bench_counter_is_interposed(void);
/// Allocates and frees `bytes` through malloc: a deliberate allocation for self-tests.
void bench_deliberate_allocation(uint64_t bytes);

/// Writes a stack trace to stderr for each of the next `count` allocations (0 stops).
void bench_trace_allocations(int count);

#endif
