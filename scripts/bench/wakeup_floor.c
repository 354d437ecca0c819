// The wake-up floor: the least CPU any process can spend on the work `bikecomputer run` is asked
// to do in scripts/bench/run_realtime.sh, on this machine. A child sends 30-byte SOCK_SEQPACKET
// datagrams on the bridge's schedule (heart rate 1 Hz, power, speed and cadence 4 Hz each:
// 13 a second at distinct phases); the parent sleeps in epoll_wait, reads each datagram until
// EAGAIN, and once a second (a timerfd) appends 16 bytes to a file and fdatasyncs it, like the
// journal. It does nothing else, so its CPU share is what wake-ups and the sync cost here.
//   cc -O2 -o /tmp/wakeup_floor scripts/bench/wakeup_floor.c && /tmp/wakeup_floor SECONDS FILE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void sleep_until(const struct timespec *start, long ms) {
    struct timespec t = {start->tv_sec + ms / 1000, start->tv_nsec + (ms % 1000) * 1000000L};
    if (t.tv_nsec >= 1000000000L) { t.tv_sec += 1; t.tv_nsec -= 1000000000L; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
}

// The bridge's schedule in one second: offsets (ms) of the 13 frames.
static const int offsets_ms[] = {60, 130, 170, 210, 310, 420, 460, 560, 670, 710, 810, 920, 960};
enum { frames_per_second = sizeof offsets_ms / sizeof offsets_ms[0] };

static void sender(int fd) {
    char frame[30] = {1};
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long second = 0;; second++) {
        for (int i = 0; i < frames_per_second; i++) {
            sleep_until(&start, second * 1000 + offsets_ms[i]);
            if (send(fd, frame, sizeof frame, 0) < 0) _exit(0);
        }
    }
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 60;
    const char *path = argc > 2 ? argv[2] : "wakeup_floor.dat";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) { perror("socketpair"); return 1; }
    pid_t child = fork();
    if (child == 0) { close(sv[0]); sender(sv[1]); }
    close(sv[1]);
    int file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (file < 0) { perror(path); kill(child, SIGKILL); return 1; }
    int ep = epoll_create1(0);
    int tick = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec every_second = {{1, 0}, {1, 0}};
    timerfd_settime(tick, 0, &every_second, NULL);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev);
    ev.data.u64 = 2;
    epoll_ctl(ep, EPOLL_CTL_ADD, tick, &ev);
    double cpu0 = cpu_ms();
    long frames = 0, wakeups = 0, syncs = 0, offset = 0;
    char buf[128] = {0};
    while (syncs < seconds) {
        struct epoll_event ready[8];
        int n = epoll_wait(ep, ready, 8, -1);
        wakeups++;
        for (int i = 0; i < n; i++) {
            if (ready[i].data.u64 == 1) {
                while (recv(sv[0], buf, sizeof buf, MSG_DONTWAIT) > 0) frames++;
            } else {
                unsigned long long expirations;
                if (read(tick, &expirations, sizeof expirations) < 0) continue;
                if (pwrite(file, buf, 16, offset) == 16) offset += 16;
                fdatasync(file);
                syncs++;
            }
        }
    }
    double ms = cpu_ms() - cpu0;
    kill(child, SIGKILL);
    unlink(path);
    printf("wakeup_floor: %ld frames, %ld wake-ups, %ld fdatasyncs in %d s: %.1f ms on CPU, "
           "%.4f %% of one core, %.1f us per wake-up\n",
           frames, wakeups, syncs, seconds, ms, ms / 10.0 / seconds, ms * 1000 / wakeups);
    return 0;
}
