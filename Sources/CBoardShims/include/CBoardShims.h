#ifndef CBOARDSHIMS_H
#define CBOARDSHIMS_H
#include <stdint.h>
#include <sys/types.h>

/// Small C helpers for calls Swift cannot make directly (variadic ioctl/fcntl, fdatasync,
/// packed structs such as epoll_event, headers Glibc's module map does not cover).
/// Every function returns -1 and leaves errno set on failure; none retries EINTR (Swift does).
int cbs_fdatasync(int fd);

// io_uring fsync (uring.c).
#include "cbs_uring.h"

// MARK: Clock

/// clock_gettime(CLOCK_MONOTONIC) in nanoseconds.
uint64_t cbs_monotonic_ns(void);

/// Whether the kernel's clock is synchronised to a time source: adjtimex(2) read-only, 1 when
/// STA_UNSYNC is clear (an NTP client, systemd-timesyncd or a GPS time daemon set it), 0 when
/// set (the boot default; any step of the clock sets it again), -1 on error (errno).
int cbs_clock_synchronised(void);

// MARK: epoll (event loop)

/// One ready descriptor: the epoll event mask and the 64-bit token given at registration.
/// (struct epoll_event is packed on x86-64; this one is not.)
typedef struct {
    uint32_t events;
    uint64_t token;
} cbs_ready_event;

#define CBS_EV_READ 0x001    // EPOLLIN
#define CBS_EV_WRITE 0x004   // EPOLLOUT
#define CBS_EV_ERROR 0x008   // EPOLLERR
#define CBS_EV_HANGUP 0x010  // EPOLLHUP
#define CBS_EV_RDHUP 0x2000  // EPOLLRDHUP

/// epoll_create1(EPOLL_CLOEXEC).
int cbs_epoll_create(void);
/// epoll_ctl: op 0 = add, 1 = modify, 2 = delete. `events` uses the CBS_EV_* bits.
int cbs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);
/// epoll_wait into `out` (at most `max`); timeout in ms (-1 = forever).
int cbs_epoll_wait(int epfd, cbs_ready_event *out, int max, int timeout_ms);

// MARK: timerfd, eventfd, signalfd

/// timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC).
int cbs_timerfd_create(void);
/// Arms the timer to fire once at the absolute CLOCK_MONOTONIC time `deadline_ns`
/// (0 disarms it).
int cbs_timerfd_arm_absolute(int fd, uint64_t deadline_ns);
/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC).
int cbs_eventfd_create(void);
/// Blocks `signals` for the calling thread (pthread_sigmask) and returns a non-blocking
/// signalfd(2) that reports them.
int cbs_signalfd_create(const int *signals, int count);
/// Reads one pending signal from a signalfd: returns its number, 0 if none is pending
/// (EAGAIN), -1 on error.
int cbs_signalfd_read(int fd);
/// Unblocks `signals` for the calling thread (after closing a signalfd).
int cbs_signals_unblock(const int *signals, int count);

// MARK: Unix stream sockets (control socket)

/// Creates a non-blocking listening AF_UNIX stream socket at `path` (an existing socket file
/// there is replaced) and sets the file's mode to `mode` before anyone can connect: the socket
/// is bound under a umask that gives no access to group and others.
int cbs_unix_listen(const char *path, int backlog, mode_t mode);
/// accept4(SOCK_NONBLOCK | SOCK_CLOEXEC); returns the client fd.
int cbs_unix_accept(int fd);
/// A blocking AF_UNIX stream connection to `path`.
int cbs_unix_connect(const char *path);
/// SO_PEERCRED: the connecting process's user id.
int cbs_peer_uid(int fd, uid_t *uid);
/// send(MSG_NOSIGNAL): a write to a closed peer returns EPIPE instead of raising SIGPIPE.
ssize_t cbs_send(int fd, const void *bytes, size_t count);
/// lstat(2) mode bits and owner of `path` (for checking the socket's permissions).
int cbs_path_mode(const char *path, mode_t *mode, uid_t *owner);

// MARK: Descriptors passed over Unix sockets (the bridge hands the app BlueZ's notification sockets)

/// recvmsg(2) of one packet with MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC: returns the
/// packet's full length (more than `count` when it was cut), 0 when the peer closed, -1 with
/// errno. The first descriptor that came with the packet is in *fd (-1 when none); any more are
/// closed here. *fd_lost is 1 when the kernel dropped descriptors that did not fit (MSG_CTRUNC).
ssize_t cbs_recv_with_fd(int sock, void *bytes, size_t count, int *fd, int *fd_lost);
/// sendmsg(2) of one packet with `fd` attached (SCM_RIGHTS), MSG_NOSIGNAL | MSG_DONTWAIT.
ssize_t cbs_send_with_fd(int sock, const void *bytes, size_t count, int fd);
#endif
