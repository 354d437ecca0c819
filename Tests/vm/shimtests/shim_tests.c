/*
 * The C shims (Sources/CGpiodShim, Sources/CI2CShim) against a real kernel, without Swift: run
 * in the test VM on amd64 and on arm64 (cross-compiled with aarch64-linux-gnu-gcc -static
 * against Debian's arm64 libgpiod.a and libi2c.a), each built against libgpiod v1 and v2.
 * The VM tests (Tests/vm/test_vm_hardware.py) build and run it; docs/testing.md.
 *
 *   shim_tests --api 1|2 --chip /dev/gpiochipN --sim DIR --i2c /dev/i2c-M --debugfs DIR
 *
 * Prints "ok <check>" / "FAIL <check>: <why>" and exits 1 if any check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "CGpiodShim.h"
#include "CI2CShim.h"

static int failures, passed;
static const char *chip, *sim, *i2c, *debugfs;

static void check(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void check(int ok, const char *name, const char *fmt, ...) {
    if (ok) { passed++; printf("ok %s\n", name); return; }
    failures++;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static void read_text(const char *path, char *out, size_t size) {
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { snprintf(out, size, "<%s: %s>", path, strerror(errno)); return; }
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n < 0) n = 0;
    out[n] = 0;
    while (n > 0 && out[n - 1] == '\n') out[--n] = 0;
}

static void write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) printf("cannot write %s: %s\n", path, strerror(errno));
    if (fd >= 0) close(fd);
}

static void sim_file(unsigned offset, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/sim_gpio%u/%s", sim, offset, name);
}

static void set_pull(unsigned offset, const char *pull) {
    char path[512];
    sim_file(offset, "pull", path, sizeof path);
    write_text(path, pull);
}

static void get_sim(unsigned offset, const char *name, char *out, size_t size) {
    char path[512];
    sim_file(offset, name, path, sizeof path);
    read_text(path, out, size);
}

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int wait_edges(cgs_line *line, cgs_edge *out, int want) {
    int got = 0;
    while (got < want) {
        struct pollfd p = {.fd = cgs_event_fd(line), .events = POLLIN};
        if (poll(&p, 1, got ? 500 : 2000) != 1) break;
        int n = cgs_read_edges(line, out + got, want - got);
        if (n < 0) { printf("cgs_read_edges: %s\n", strerror(errno)); break; }
        got += n;
    }
    return got;
}

static long state_value(const char *key) {
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/state", debugfs);
    read_text(path, text, sizeof text);
    size_t k = strlen(key);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, key, k) == 0 && line[k] == ' ') return strtol(line + k + 1, NULL, 10);
    }
    return -1;
}

static void gpio_checks(int api) {
    char v[256];
    check(cgs_api_version() == api, "shim compiled for the requested libgpiod API", "v%d, wanted v%d", cgs_api_version(), api);
    check(cgs_library_version()[0] == '0' + api, "the linked libgpiod matches", "%s", cgs_library_version());

    cgs_error err;
    cgs_line *in = cgs_request_input(chip, 17, 1, CGS_BIAS_PULL_UP, "shim-test", &err);
    check(in != NULL, "input request with pull-up, active-low", "stage %d errno %d", err.stage, err.error);
    if (!in) return;
    get_sim(17, "pull", v, sizeof v);
    check(strcmp(v, "pull-up") == 0, "the pull-up reaches gpio-sim", "pull is %s", v);
    check(cgs_get_value(in) == 0, "released reads inactive", "%d", cgs_get_value(in));
    uint64_t before = monotonic_ns();
    set_pull(17, "pull-down");
    cgs_edge e[32];
    int n = wait_edges(in, e, 1);
    uint64_t after = monotonic_ns();
    check(n == 1 && e[0].rising == 1, "a press is one edge to active", "%d edges, rising %d", n, n ? e[0].rising : -1);
    check(n == 1 && e[0].timestamp_ns >= before && e[0].timestamp_ns <= after, "the edge has a CLOCK_MONOTONIC timestamp",
          "%llu not in [%llu, %llu]", n ? (unsigned long long)e[0].timestamp_ns : 0ull, (unsigned long long)before, (unsigned long long)after);
    check(cgs_get_value(in) == 1, "pressed reads active", "%d", cgs_get_value(in));
    for (int i = 0; i < 5; i++) { set_pull(17, "pull-up"); set_pull(17, "pull-down"); }
    set_pull(17, "pull-up");
    n = wait_edges(in, e, 11);
    int alternating = n == 11;
    for (int i = 0; i < n; i++) if (e[i].rising != (i % 2 == 1)) alternating = 0;
    check(alternating, "eleven quick edges all queue, alternating", "%d edges", n);

    cgs_line *again = cgs_request_input(chip, 17, 1, CGS_BIAS_PULL_UP, "second", &err);
    check(!again && err.stage == CGS_STAGE_REQUEST && err.error == EBUSY && strcmp(err.consumer, "shim-test") == 0,
          "a held line is busy and names its holder", "stage %d errno %d consumer '%s'", err.stage, err.error, err.consumer);
    if (again) cgs_release(again);
    cgs_release(in);

    cgs_line *beyond = cgs_request_input(chip, 200, 1, CGS_BIAS_PULL_UP, "x", &err);
    check(!beyond && (err.stage == CGS_STAGE_GET_LINE || (err.stage == CGS_STAGE_REQUEST && err.error == EINVAL)) && err.line_count == 32,
          "a line beyond the chip is refused with the chip's line count", "stage %d errno %d lines %u", err.stage, err.error, err.line_count);
    if (beyond) cgs_release(beyond);
    cgs_line *nochip = cgs_request_output("/dev/gpiochip97", 1, 0, 0, "x", &err);
    check(!nochip && err.stage == CGS_STAGE_OPEN_CHIP && err.error == ENOENT, "a missing chip fails at open with ENOENT",
          "stage %d errno %d", err.stage, err.error);

    cgs_line *out = cgs_request_output(chip, 18, 0, 0, "shim-buzzer", &err);
    check(out != NULL, "output request", "stage %d errno %d", err.stage, err.error);
    if (!out) return;
    get_sim(18, "value", v, sizeof v);
    check(strcmp(v, "0") == 0, "the output starts low", "%s", v);
    check(cgs_set_value(out, 1) == 0, "set the output active", "%s", strerror(errno));
    get_sim(18, "value", v, sizeof v);
    check(strcmp(v, "1") == 0, "the output reads back high in gpio-sim", "%s", v);
    cgs_release(out);
}

static void i2c_checks(void) {
    int fd = ci2c_open(i2c);
    check(fd >= 0, "open the simulated display's bus", "%s", strerror(-fd));
    if (fd < 0) return;
    check(ci2c_set_address(fd, 0x3c) == 0, "I2C_SLAVE 0x3C", "");
    uint8_t init[] = {0xAE, 0x8D, 0x14, 0x20, 0x00, 0xA1, 0xC8, 0x81, 0x42, 0xAF};
    check(ci2c_write_block(fd, 0x00, init, sizeof init) == 0, "a command block write", "%s", strerror(errno));
    check(state_value("display_on") == 1 && state_value("charge_pump_on") == 1 && state_value("contrast") == 0x42
          && state_value("addressing_mode") == 0 && state_value("segment_remap") == 1,
          "the commands reach the kernel's controller", "display_on %ld pump %ld contrast %ld mode %ld",
          state_value("display_on"), state_value("charge_pump_on"), state_value("contrast"), state_value("addressing_mode"));
    uint8_t window[] = {0x21, 0, 127, 0x22, 0, 7};
    ci2c_write_block(fd, 0x00, window, sizeof window);
    uint8_t data[32];
    int ok = 1;
    for (int t = 0; t < 32 && ok; t++) {  /* a whole 1,024-byte frame in 32-byte blocks */
        for (int i = 0; i < 32; i++) data[i] = (uint8_t)(t * 32 + i * 7);
        ok = ci2c_write_block(fd, 0x40, data, 32) == 0;
    }
    check(ok, "a 1,024-byte frame as 32 block writes", "%s", strerror(errno));
    char path[512];
    snprintf(path, sizeof path, "%s/gddram", debugfs);
    uint8_t mem[1024];
    int g = open(path, O_RDONLY);
    ssize_t n = g >= 0 ? read(g, mem, sizeof mem) : -1;
    if (g >= 0) close(g);
    int same = n == 1024;
    for (int i = 0; i < 1024 && same; i++) same = mem[i] == (uint8_t)((i / 32) * 32 + (i % 32) * 7);
    check(same, "GDDRAM holds the frame byte for byte", "read %zd bytes", n);
    check(ci2c_set_address(fd, 0x3d) == 0, "I2C_SLAVE 0x3D", "");
    int r = ci2c_write_block(fd, 0x00, init, 1);
    check(r == -EREMOTEIO, "nothing at 0x3D: -EREMOTEIO, as a Pi's i2c-bcm2835", "%d (%s)", r, strerror(-r));
    ci2c_set_address(fd, 0x3c);
    snprintf(path, sizeof path, "%s/unplugged", debugfs);
    write_text(path, "1");
    r = ci2c_write_block(fd, 0x00, init, 1);
    check(r == -EREMOTEIO, "unplugged: the write is NACKed", "%d", r);
    write_text(path, "0");
    check(ci2c_write_block(fd, 0x00, init, 1) == 0, "plugged back: the write goes through", "");
    ci2c_close(fd);
}

int main(int argc, char **argv) {
    int api = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--api")) api = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--chip")) chip = argv[i + 1];
        else if (!strcmp(argv[i], "--sim")) sim = argv[i + 1];
        else if (!strcmp(argv[i], "--i2c")) i2c = argv[i + 1];
        else if (!strcmp(argv[i], "--debugfs")) debugfs = argv[i + 1];
    }
    if (!api || !chip || !sim || !i2c || !debugfs) {
        fprintf(stderr, "usage: shim_tests --api 1|2 --chip /dev/gpiochipN --sim DIR --i2c /dev/i2c-M --debugfs DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("shim tests: libgpiod API %d (%s), %s, %s\n", cgs_api_version(), cgs_library_version(), chip, i2c);
    gpio_checks(api);
    i2c_checks();
    printf("%d passed, %d failed\n", passed, failures);
    return failures ? 1 : 0;
}
