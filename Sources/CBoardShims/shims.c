#define _GNU_SOURCE
#include "CBoardShims.h"
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <sys/timex.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

int cbs_fdatasync(int fd) { return fdatasync(fd); }

uint64_t cbs_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cbs_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cbs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = token;
    int cop = op == 0 ? EPOLL_CTL_ADD : op == 1 ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;
    return epoll_ctl(epfd, cop, fd, &ev);
}

#define CBS_EPOLL_BATCH_MAX 64
int cbs_epoll_wait(int epfd, cbs_ready_event *out, int max, int timeout_ms) {
    struct epoll_event evs[CBS_EPOLL_BATCH_MAX];
    if (max > CBS_EPOLL_BATCH_MAX) max = CBS_EPOLL_BATCH_MAX;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        out[i].events = evs[i].events;
        out[i].token = evs[i].data.u64;
    }
    return n;
}

int cbs_timerfd_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }

int cbs_timerfd_arm_absolute(int fd, uint64_t deadline_ns) {
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    its.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

int cbs_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static int fill_set(sigset_t *set, const int *signals, int count) {
    sigemptyset(set);
    for (int i = 0; i < count; i++) {
        if (sigaddset(set, signals[i]) != 0) return -1;
    }
    return 0;
}

int cbs_signalfd_create(const int *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc != 0) { errno = rc; return -1; }
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int cbs_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n < 0) return errno == EAGAIN ? 0 : -1;
    if (n != (ssize_t)sizeof info) { errno = EIO; return -1; }
    return (int)info.ssi_signo;
}

int cbs_signals_unblock(const int *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    int rc = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    if (rc != 0) { errno = rc; return -1; }
    return 0;
}

int cbs_unix_listen(const char *path, int backlog, mode_t mode) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) { errno = ENAMETOOLONG; return -1; }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) { close(fd); errno = EEXIST; return -1; }
        unlink(path);
    }
    mode_t old = umask(0777 & ~mode);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    umask(old);
    if (rc != 0) { int e = errno; close(fd); errno = e; return -1; }
    if (chmod(path, mode) != 0 || listen(fd, backlog) != 0) {
        int e = errno; close(fd); unlink(path); errno = e; return -1;
    }
    return fd;
}

int cbs_unix_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int cbs_unix_connect(const char *path) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) { errno = ENAMETOOLONG; return -1; }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int rc;
    do { rc = connect(fd, (struct sockaddr *)&addr, sizeof addr); } while (rc != 0 && errno == EINTR);
    if (rc != 0) { int e = errno; close(fd); errno = e; return -1; }
    return fd;
}

int cbs_peer_uid(int fd, uid_t *uid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *uid = cred.uid;
    return 0;
}

ssize_t cbs_send(int fd, const void *bytes, size_t count) { return send(fd, bytes, count, MSG_NOSIGNAL); }

int cbs_path_mode(const char *path, mode_t *mode, uid_t *owner) {
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    *mode = st.st_mode & 07777;
    *owner = st.st_uid;
    return 0;
}

int cbs_clock_synchronised(void) {
    struct timex tx;
    memset(&tx, 0, sizeof tx); /* modes = 0: read only, no privilege needed */
    if (adjtimex(&tx) < 0) return -1;
    return (tx.status & STA_UNSYNC) ? 0 : 1;
}

#define CBS_FDS_PER_PACKET_MAX 4

ssize_t cbs_recv_with_fd(int sock, void *bytes, size_t count, int *fd, int *fd_lost) {
    union {
        char space[CMSG_SPACE(sizeof(int) * CBS_FDS_PER_PACKET_MAX)];
        struct cmsghdr align;
    } control;
    struct iovec iov = { bytes, count };
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control.space;
    m.msg_controllen = sizeof control.space;
    *fd = -1;
    *fd_lost = 0;
    ssize_t n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
    if (n < 0) return -1;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h != NULL; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int got[CBS_FDS_PER_PACKET_MAX];
        if (k > CBS_FDS_PER_PACKET_MAX) k = CBS_FDS_PER_PACKET_MAX;
        memcpy(got, CMSG_DATA(h), k * sizeof(int));
        for (size_t i = 0; i < k; i++) {
            if (*fd < 0) *fd = got[i]; else close(got[i]);
        }
    }
    if (m.msg_flags & MSG_CTRUNC) *fd_lost = 1;
    return n;
}

ssize_t cbs_send_with_fd(int sock, const void *bytes, size_t count, int fd) {
    union {
        char space[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = { (void *)bytes, count };
    struct msghdr m;
    memset(&m, 0, sizeof m);
    memset(&control, 0, sizeof control);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control.space;
    m.msg_controllen = sizeof control.space;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof(int));
    return sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}
