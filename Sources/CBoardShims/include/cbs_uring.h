#ifndef CBS_URING_H
#define CBS_URING_H
#include <stdint.h>

/// fsync/fdatasync (IORING_OP_FSYNC), openat, fallocate and unlinkat through io_uring,
/// completions announced on an eventfd (uring.c). Single-threaded: one owner prepares, submits
/// and reaps. Functions returning int return -1 with errno set on failure, unless said otherwise.
/// `cbs_uring_prep_*` only queue a submission (EBUSY when the ring is full); `cbs_uring_submit`
/// hands everything queued to the kernel in one call, so a chain linked with `link` (each
/// entry but the last: IOSQE_IO_LINK, a failure cancels the rest with -ECANCELED) is submitted
/// whole.
typedef struct cbs_uring cbs_uring;

/// Longest path (with its NUL) OPENAT and UNLINKAT take; names relative to a directory descriptor.
#define CBS_URING_PATH_MAX 64

/// A ring of `entries` submissions; NULL with `*error` set (ENOSYS: no io_uring in this kernel;
/// EPERM: a seccomp filter or kernel.io_uring_disabled refuses it).
cbs_uring *cbs_uring_open(unsigned entries, int *error);
void cbs_uring_close(cbs_uring *r);
/// The eventfd (non-blocking) that becomes readable when completions arrive.
int cbs_uring_eventfd(const cbs_uring *r);
/// Submissions not yet reaped.
unsigned cbs_uring_inflight(const cbs_uring *r);
/// Queues and submits fsync (datasync 0) or fdatasync (datasync 1) of `fd`; its completion carries `user_data`.
int cbs_uring_fsync(cbs_uring *r, int fd, int datasync, uint64_t user_data);
/// Whether this kernel runs `opcode` (an IORING_OP_*; IORING_REGISTER_PROBE): 1 or 0.
int cbs_uring_supports(const cbs_uring *r, int opcode);
/// Whether it runs OPENAT, FALLOCATE and UNLINKAT (Linux 5.11 and later): 1 or 0.
int cbs_uring_supports_file_ops(const cbs_uring *r);
/// 1 when the kernel runs IORING_OP_WRITE (5.6 and later).
int cbs_uring_supports_write(const cbs_uring *r);
/// Queues an fsync/fdatasync of `fd`.
int cbs_uring_prep_fsync(cbs_uring *r, int fd, int datasync, uint64_t user_data, int link);
/// pwrite(fd, bytes, length, offset) (IORING_OP_WRITE, 5.6 and later); `bytes` must stay valid
/// and unchanged until its completion. A short write breaks a link (the rest: -ECANCELED). Queued
/// with IOSQE_ASYNC: the kernel's worker runs it, never the submitter.
int cbs_uring_prep_write(cbs_uring *r, int fd, const void *bytes, uint32_t length, uint64_t offset, uint64_t user_data, int link);
/// Queues openat(dirfd, path, flags, mode); the completion's result is the new descriptor.
int cbs_uring_prep_openat(cbs_uring *r, int dirfd, const char *path, int flags, unsigned mode, uint64_t user_data);
/// Queues fallocate(fd, mode, offset, length).
int cbs_uring_prep_fallocate(cbs_uring *r, int fd, int mode, uint64_t offset, uint64_t length, uint64_t user_data, int link);
/// Queues unlinkat(dirfd, path, flags).
int cbs_uring_prep_unlinkat(cbs_uring *r, int dirfd, const char *path, int flags, uint64_t user_data, int link);
/// Submits everything queued: how many (all of them), or -1 with nothing submitted past the
/// first refused entry (those are withdrawn).
int cbs_uring_submit(cbs_uring *r);
/// Withdraws everything queued and not submitted.
void cbs_uring_discard(cbs_uring *r);
/// Takes one completion: 1 (user_data and result, a negative errno on failure, set), 0 if none.
int cbs_uring_reap(cbs_uring *r, uint64_t *user_data, int32_t *result);
/// Blocks until at least one completion is there (shutdown only; never on the loop's turns).
int cbs_uring_wait(cbs_uring *r);
/// Reads the eventfd's counter (clears its readiness).
int cbs_uring_clear_eventfd(const cbs_uring *r);

#endif
