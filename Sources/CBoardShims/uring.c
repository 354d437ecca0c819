// File operations without blocking the run loop: a small io_uring over the raw syscalls
// (IORING_OP_FSYNC, with IORING_FSYNC_DATASYNC for fdatasync; OPENAT, FALLOCATE and UNLINKAT for
// the journal's segment creation and compaction), its completions announced on an eventfd the
// run loop watches. No liburing, no threads of ours: the kernel runs each operation in its own
// worker and posts a completion. See cbs_uring.h and docs/journal.md.
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
    // Prepared (in the submission ring) and not yet submitted.
    unsigned prepared;
    // Path names of OPENAT/UNLINKAT, one per submission slot, kept until submitted (the kernel
    // copies them when it takes the submission).
    char (*paths)[CBS_URING_PATH_MAX];
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
    free(r->paths);
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
    r->paths = calloc(r->entries, sizeof *r->paths);
    if (!r->paths) { errno = ENOMEM; goto fail; }
    return r;
fail:
    *error = errno ? errno : EINVAL;
    cbs_uring_close(r);
    return NULL;
}

int cbs_uring_eventfd(const cbs_uring *r) { return r->eventfd; }

unsigned cbs_uring_inflight(const cbs_uring *r) { return r->inflight; }

int cbs_uring_supports(const cbs_uring *r, int opcode) {
    // IORING_REGISTER_PROBE (5.6): which opcodes this kernel knows.
    size_t len = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *probe = calloc(1, len);
    if (!probe) return 0;
    int ok = 0;
    if (sys_register(r->fd, IORING_REGISTER_PROBE, probe, 256) == 0 && opcode >= 0 && opcode <= probe->last_op)
        ok = (probe->ops[opcode].flags & IO_URING_OP_SUPPORTED) != 0;
    free(probe);
    return ok;
}

int cbs_uring_supports_write(const cbs_uring *r) {
    return cbs_uring_supports(r, IORING_OP_WRITE);
}

int cbs_uring_supports_file_ops(const cbs_uring *r) {
    return cbs_uring_supports(r, IORING_OP_OPENAT) && cbs_uring_supports(r, IORING_OP_FALLOCATE) &&
           cbs_uring_supports(r, IORING_OP_UNLINKAT);
}

/// The next free submission entry (zeroed), or NULL with errno EBUSY when the ring is full.
static struct io_uring_sqe *prepare(cbs_uring *r, uint64_t user_data, int link, unsigned *slot) {
    if (r->inflight + r->prepared >= r->entries) { errno = EBUSY; return NULL; }
    unsigned tail = *r->sq_tail;
    unsigned head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
    if (tail - head >= r->entries) { errno = EBUSY; return NULL; }
    unsigned index = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = &r->sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->user_data = user_data;
    if (link) sqe->flags |= IOSQE_IO_LINK;
    r->sq_array[index] = index;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    r->prepared++;
    if (slot) *slot = index;
    return sqe;
}

int cbs_uring_submit(cbs_uring *r) {
    if (r->prepared == 0) return 0;
    int n;
    do { n = sys_enter(r->fd, r->prepared, 0, 0); } while (n < 0 && errno == EINTR);
    unsigned taken = n > 0 ? (unsigned)n : 0;
    if (taken > r->prepared) taken = r->prepared;
    r->inflight += taken;
    if (taken < r->prepared) {
        // Not all taken: withdraw the rest (the kernel has not read them) so the ring stays
        // consistent, and report the failure.
        int saved = n < 0 ? errno : EAGAIN;
        unsigned tail = *r->sq_tail;
        __atomic_store_n(r->sq_tail, tail - (r->prepared - taken), __ATOMIC_RELEASE);
        r->prepared = 0;
        errno = saved;
        return -1;
    }
    r->prepared = 0;
    return (int)taken;
}

void cbs_uring_discard(cbs_uring *r) {
    unsigned tail = *r->sq_tail;
    __atomic_store_n(r->sq_tail, tail - r->prepared, __ATOMIC_RELEASE);
    r->prepared = 0;
}

int cbs_uring_prep_fsync(cbs_uring *r, int fd, int datasync, uint64_t user_data, int link) {
    struct io_uring_sqe *sqe = prepare(r, user_data, link, NULL);
    if (!sqe) return -1;
    sqe->opcode = IORING_OP_FSYNC;
    sqe->fd = fd;
    sqe->fsync_flags = datasync ? IORING_FSYNC_DATASYNC : 0;
    return 0;
}

int cbs_uring_prep_write(cbs_uring *r, int fd, const void *bytes, uint32_t length, uint64_t offset, uint64_t user_data, int link) {
    struct io_uring_sqe *sqe = prepare(r, user_data, link, NULL);
    if (!sqe) return -1;
    sqe->opcode = IORING_OP_WRITE;
    // Straight to the kernel's worker: without IOSQE_ASYNC the submitter tries the write first
    // where the file system takes buffered writes without waiting (FMODE_BUF_WASYNC), and such a
    // try can still wait for a page under writeback (stable pages): the loop would wait for the card.
    sqe->flags |= IOSQE_ASYNC;
    sqe->fd = fd;
    sqe->addr = (uint64_t)(uintptr_t)bytes;
    sqe->len = length;
    sqe->off = offset;
    return 0;
}

static int copy_path(cbs_uring *r, unsigned slot, const char *path) {
    size_t len = strlen(path);
    if (len >= CBS_URING_PATH_MAX) { errno = ENAMETOOLONG; return -1; }
    memcpy(r->paths[slot], path, len + 1);
    return 0;
}

int cbs_uring_prep_openat(cbs_uring *r, int dirfd, const char *path, int flags, unsigned mode, uint64_t user_data) {
    if (strlen(path) >= CBS_URING_PATH_MAX) { errno = ENAMETOOLONG; return -1; }
    unsigned slot;
    struct io_uring_sqe *sqe = prepare(r, user_data, 0, &slot);
    if (!sqe) return -1;
    copy_path(r, slot, path);
    sqe->opcode = IORING_OP_OPENAT;
    sqe->fd = dirfd;
    sqe->addr = (uint64_t)(uintptr_t)r->paths[slot];
    sqe->len = mode;
    sqe->open_flags = (uint32_t)flags;
    return 0;
}

int cbs_uring_prep_fallocate(cbs_uring *r, int fd, int mode, uint64_t offset, uint64_t length, uint64_t user_data, int link) {
    struct io_uring_sqe *sqe = prepare(r, user_data, link, NULL);
    if (!sqe) return -1;
    sqe->opcode = IORING_OP_FALLOCATE;
    sqe->fd = fd;
    sqe->off = offset;
    sqe->addr = length; // as the kernel reads it: addr is the length, len the mode
    sqe->len = (uint32_t)mode;
    return 0;
}

int cbs_uring_prep_unlinkat(cbs_uring *r, int dirfd, const char *path, int flags, uint64_t user_data, int link) {
    if (strlen(path) >= CBS_URING_PATH_MAX) { errno = ENAMETOOLONG; return -1; }
    unsigned slot;
    struct io_uring_sqe *sqe = prepare(r, user_data, link, &slot);
    if (!sqe) return -1;
    copy_path(r, slot, path);
    sqe->opcode = IORING_OP_UNLINKAT;
    sqe->fd = dirfd;
    sqe->addr = (uint64_t)(uintptr_t)r->paths[slot];
    sqe->unlink_flags = (uint32_t)flags;
    return 0;
}

int cbs_uring_fsync(cbs_uring *r, int fd, int datasync, uint64_t user_data) {
    if (r->prepared != 0) { errno = EBUSY; return -1; }
    if (cbs_uring_prep_fsync(r, fd, datasync, user_data, 0) != 0) return -1;
    return cbs_uring_submit(r) == 1 ? 0 : -1;
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
