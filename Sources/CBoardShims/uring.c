// fdatasync/fsync without blocking the run loop: a small io_uring over the raw syscalls
// (IORING_OP_FSYNC, with IORING_FSYNC_DATASYNC for fdatasync), its completions announced on an
// eventfd the run loop watches. No liburing, no threads of ours: the kernel runs the sync in its
// own worker and posts a completion. See cbs_uring.h and docs/journal.md.
#define _GNU_SOURCE
#include "include/cbs_uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cbs_uring {
    int fd;
    int eventfd;
    unsigned entries;
    unsigned inflight;
    // Submission ring.
    void *sq_map;
    size_t sq_map_len;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    struct io_uring_sqe *sqes;
    size_t sqes_len;
    // Completion ring.
    void *cq_map;
    size_t cq_map_len;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
};

static int sys_setup(unsigned entries, struct io_uring_params *p) {
    return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags) {
    return (int)syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, NULL, 0);
}

static int sys_register(int fd, unsigned op, const void *arg, unsigned nr) {
    return (int)syscall(__NR_io_uring_register, fd, op, arg, nr);
}

void cbs_uring_close(cbs_uring *r) {
    if (!r) return;
    if (r->sqes && r->sqes != MAP_FAILED) munmap(r->sqes, r->sqes_len);
    if (r->cq_map && r->cq_map != r->sq_map && r->cq_map != MAP_FAILED) munmap(r->cq_map, r->cq_map_len);
    if (r->sq_map && r->sq_map != MAP_FAILED) munmap(r->sq_map, r->sq_map_len);
    if (r->fd >= 0) close(r->fd);
    if (r->eventfd >= 0) close(r->eventfd);
    free(r);
}

cbs_uring *cbs_uring_open(unsigned entries, int *error) {
    cbs_uring *r = calloc(1, sizeof *r);
    if (!r) { *error = ENOMEM; return NULL; }
    r->fd = -1;
    r->eventfd = -1;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = sys_setup(entries, &p);
    if (fd < 0) { *error = errno; free(r); return NULL; }
    r->fd = fd;
    r->entries = p.sq_entries;
    r->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    r->cq_map_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && r->cq_map_len > r->sq_map_len) r->sq_map_len = r->cq_map_len;
    r->sq_map = mmap(NULL, r->sq_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    if (r->sq_map == MAP_FAILED) goto fail;
    if (single) {
        r->cq_map = r->sq_map;
    } else {
        r->cq_map = mmap(NULL, r->cq_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
        if (r->cq_map == MAP_FAILED) goto fail;
    }
    r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
    r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (r->sqes == MAP_FAILED) goto fail;
    char *sq = r->sq_map, *cq = r->cq_map;
    r->sq_head = (unsigned *)(sq + p.sq_off.head);
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    r->eventfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->eventfd < 0) goto fail;
    if (sys_register(fd, IORING_REGISTER_EVENTFD, &r->eventfd, 1) < 0) goto fail;
    return r;
fail:
    *error = errno ? errno : EINVAL;
    cbs_uring_close(r);
    return NULL;
}

int cbs_uring_eventfd(const cbs_uring *r) { return r->eventfd; }

unsigned cbs_uring_inflight(const cbs_uring *r) { return r->inflight; }

int cbs_uring_fsync(cbs_uring *r, int fd, int datasync, uint64_t user_data) {
    if (r->inflight >= r->entries) { errno = EBUSY; return -1; }
    unsigned tail = *r->sq_tail;
    unsigned head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
    if (tail - head >= r->entries) { errno = EBUSY; return -1; }
    unsigned index = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = &r->sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_FSYNC;
    sqe->fd = fd;
    sqe->fsync_flags = datasync ? IORING_FSYNC_DATASYNC : 0;
    sqe->user_data = user_data;
    r->sq_array[index] = index;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    int n;
    do { n = sys_enter(r->fd, 1, 0, 0); } while (n < 0 && errno == EINTR);
    if (n < 1) {
        // Not taken: withdraw it so the ring stays consistent.
        if (n == 0) errno = EAGAIN;
        __atomic_store_n(r->sq_tail, tail, __ATOMIC_RELEASE);
        return -1;
    }
    r->inflight++;
    return 0;
}

int cbs_uring_reap(cbs_uring *r, uint64_t *user_data, int32_t *result) {
    unsigned head = *r->cq_head;
    unsigned tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
    if (head == tail) return 0;
    struct io_uring_cqe *cqe = &r->cqes[head & *r->cq_mask];
    *user_data = cqe->user_data;
    *result = cqe->res;
    __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
    if (r->inflight > 0) r->inflight--;
    return 1;
}

int cbs_uring_wait(cbs_uring *r) {
    unsigned head = *r->cq_head;
    if (head != __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) return 0;
    if (r->inflight == 0) { errno = EAGAIN; return -1; }
    int n;
    do { n = sys_enter(r->fd, 0, 1, IORING_ENTER_GETEVENTS); } while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : 0;
}

int cbs_uring_clear_eventfd(const cbs_uring *r) {
    uint64_t v;
    ssize_t n = read(r->eventfd, &v, sizeof v);
    return n == (ssize_t)sizeof v ? 0 : -1;
}
