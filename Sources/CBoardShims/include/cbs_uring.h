#ifndef CBS_URING_H
#define CBS_URING_H
#include <stdint.h>

/// fsync/fdatasync through io_uring (IORING_OP_FSYNC), completions announced on an eventfd
/// (uring.c). Single-threaded: one owner submits and reaps. Functions returning int return -1
/// with errno set on failure, unless said otherwise.
typedef struct cbs_uring cbs_uring;

/// A ring of `entries` submissions; NULL with `*error` set (ENOSYS: no io_uring in this kernel;
/// EPERM: a seccomp filter or kernel.io_uring_disabled refuses it).
cbs_uring *cbs_uring_open(unsigned entries, int *error);
void cbs_uring_close(cbs_uring *r);
/// The eventfd (non-blocking) that becomes readable when completions arrive.
int cbs_uring_eventfd(const cbs_uring *r);
/// Submissions not yet reaped.
unsigned cbs_uring_inflight(const cbs_uring *r);
/// Submits fsync (datasync 0) or fdatasync (datasync 1) of `fd`; its completion carries `user_data`.
int cbs_uring_fsync(cbs_uring *r, int fd, int datasync, uint64_t user_data);
/// Takes one completion: 1 (user_data and result, a negative errno on failure, set), 0 if none.
int cbs_uring_reap(cbs_uring *r, uint64_t *user_data, int32_t *result);
/// Blocks until at least one completion is there (shutdown only; never on the loop's turns).
int cbs_uring_wait(cbs_uring *r);
/// Reads the eventfd's counter (clears its readiness).
int cbs_uring_clear_eventfd(const cbs_uring *r);

#endif
