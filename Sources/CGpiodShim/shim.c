#include "CGpiodShim.h"
#include <errno.h>
#include <fcntl.h>
#include <gpiod.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CGS_EDGES_PER_READ_MAX 16

static void cgs_fail(cgs_error *err, int stage, int error) {
    if (!err) return;
    err->stage = stage;
    err->error = error;
}

static void cgs_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

#ifdef GPIOD_LINE_BULK_MAX_LINES
/* ---------------------------------------------------------------- libgpiod v1 (1.x) */

struct cgs_line {
    struct gpiod_chip *chip;
    struct gpiod_line *line;
};

int cgs_api_version(void) { return 1; }
const char *cgs_library_version(void) { return gpiod_version_string(); }

static cgs_line *cgs_request(const char *chip_path, unsigned offset, int request_type, int flags,
                             int initial, const char *consumer, cgs_error *err) {
    if (err) memset(err, 0, sizeof *err);
    struct gpiod_chip *chip = gpiod_chip_open(chip_path);
    if (!chip) { cgs_fail(err, CGS_STAGE_OPEN_CHIP, errno); return NULL; }
    if (err) err->line_count = gpiod_chip_num_lines(chip);
    struct gpiod_line *line = gpiod_chip_get_line(chip, offset);
    if (!line) { int e = errno; gpiod_chip_close(chip); cgs_fail(err, CGS_STAGE_GET_LINE, e); return NULL; }
    struct gpiod_line_request_config config;
    memset(&config, 0, sizeof config);
    config.consumer = consumer;
    config.request_type = request_type;
    config.flags = flags;
    if (gpiod_line_request(line, &config, initial) != 0) {
        int e = errno;
        if (err && e == EBUSY && gpiod_line_update(line) == 0 && gpiod_line_consumer(line)) {
            strncpy(err->consumer, gpiod_line_consumer(line), sizeof err->consumer - 1);
        }
        gpiod_chip_close(chip);
        cgs_fail(err, CGS_STAGE_REQUEST, e);
        return NULL;
    }
    cgs_line *h = calloc(1, sizeof *h);
    if (!h) { gpiod_chip_close(chip); cgs_fail(err, CGS_STAGE_REQUEST, ENOMEM); return NULL; }
    h->chip = chip;
    h->line = line;
    return h;
}

cgs_line *cgs_request_input(const char *chip_path, unsigned offset, int active_low, int bias,
                            const char *consumer, cgs_error *err) {
    int flags = active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
    if (bias == CGS_BIAS_PULL_UP) flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP;
    if (bias == CGS_BIAS_PULL_DOWN) flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN;
    if (bias == CGS_BIAS_DISABLED) flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE;
    cgs_line *h = cgs_request(chip_path, offset, GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES, flags, 0, consumer, err);
    if (h) {
        int fd = gpiod_line_event_get_fd(h->line);
        if (fd < 0) { int e = errno; cgs_release(h); cgs_fail(err, CGS_STAGE_EVENT_FD, e); return NULL; }
        cgs_set_nonblocking(fd);
    }
    return h;
}

cgs_line *cgs_request_output(const char *chip_path, unsigned offset, int active_low, int initial,
                             const char *consumer, cgs_error *err) {
    int flags = active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
    return cgs_request(chip_path, offset, GPIOD_LINE_REQUEST_DIRECTION_OUTPUT, flags, initial, consumer, err);
}

int cgs_event_fd(cgs_line *h) { return gpiod_line_event_get_fd(h->line); }

int cgs_read_edges(cgs_line *h, cgs_edge *out, int max) {
    struct gpiod_line_event events[CGS_EDGES_PER_READ_MAX];
    if (max > CGS_EDGES_PER_READ_MAX) max = CGS_EDGES_PER_READ_MAX;
    int n = gpiod_line_event_read_multiple(h->line, events, (unsigned)max);
    if (n < 0) return errno == EAGAIN ? 0 : -1;
    for (int i = 0; i < n; i++) {
        out[i].rising = events[i].event_type == GPIOD_LINE_EVENT_RISING_EDGE;
        out[i].timestamp_ns = (uint64_t)events[i].ts.tv_sec * 1000000000ull + (uint64_t)events[i].ts.tv_nsec;
    }
    return n;
}

int cgs_get_value(cgs_line *h) { return gpiod_line_get_value(h->line); }
int cgs_set_value(cgs_line *h, int value) { return gpiod_line_set_value(h->line, value); }

void cgs_release(cgs_line *h) {
    if (!h) return;
    gpiod_line_release(h->line);
    gpiod_chip_close(h->chip);
    free(h);
}

#else
/* ---------------------------------------------------------------- libgpiod v2 (2.x) */

struct cgs_line {
    struct gpiod_line_request *request;
    struct gpiod_edge_event_buffer *events;
    unsigned offset;
};

int cgs_api_version(void) { return 2; }
const char *cgs_library_version(void) { return gpiod_api_version(); }

static cgs_line *cgs_request(const char *chip_path, unsigned offset, struct gpiod_line_settings *settings,
                             const char *consumer, int want_events, cgs_error *err) {
    if (err) memset(err, 0, sizeof *err);
    struct gpiod_chip *chip = gpiod_chip_open(chip_path);
    if (!chip) { cgs_fail(err, CGS_STAGE_OPEN_CHIP, errno); return NULL; }
    struct gpiod_chip_info *chip_info = gpiod_chip_get_info(chip);
    if (chip_info) {
        if (err) err->line_count = (unsigned)gpiod_chip_info_get_num_lines(chip_info);
        if (offset >= gpiod_chip_info_get_num_lines(chip_info)) {
            gpiod_chip_info_free(chip_info);
            gpiod_chip_close(chip);
            cgs_fail(err, CGS_STAGE_GET_LINE, EINVAL);
            return NULL;
        }
        gpiod_chip_info_free(chip_info);
    }
    struct gpiod_line_config *line_cfg = gpiod_line_config_new();
    struct gpiod_request_config *req_cfg = gpiod_request_config_new();
    struct gpiod_line_request *request = NULL;
    int e = ENOMEM;
    if (line_cfg && req_cfg && gpiod_line_config_add_line_settings(line_cfg, &offset, 1, settings) == 0) {
        gpiod_request_config_set_consumer(req_cfg, consumer);
        request = gpiod_chip_request_lines(chip, req_cfg, line_cfg);
        if (!request) e = errno;
    }
    if (!request && err && e == EBUSY) {
        struct gpiod_line_info *info = gpiod_chip_get_line_info(chip, offset);
        if (info) {
            const char *holder = gpiod_line_info_get_consumer(info);
            if (holder) strncpy(err->consumer, holder, sizeof err->consumer - 1);
            gpiod_line_info_free(info);
        }
    }
    if (req_cfg) gpiod_request_config_free(req_cfg);
    if (line_cfg) gpiod_line_config_free(line_cfg);
    gpiod_chip_close(chip); /* the request keeps its own reference to the chip */
    if (!request) { cgs_fail(err, CGS_STAGE_REQUEST, e); return NULL; }
    cgs_line *h = calloc(1, sizeof *h);
    if (!h) { gpiod_line_request_release(request); cgs_fail(err, CGS_STAGE_REQUEST, ENOMEM); return NULL; }
    h->request = request;
    h->offset = offset;
    if (want_events) {
        h->events = gpiod_edge_event_buffer_new(CGS_EDGES_PER_READ_MAX);
        if (!h->events) { cgs_release(h); cgs_fail(err, CGS_STAGE_EVENT_FD, ENOMEM); return NULL; }
        cgs_set_nonblocking(gpiod_line_request_get_fd(request));
    }
    return h;
}

cgs_line *cgs_request_input(const char *chip_path, unsigned offset, int active_low, int bias,
                            const char *consumer, cgs_error *err) {
    struct gpiod_line_settings *s = gpiod_line_settings_new();
    if (!s) { cgs_fail(err, CGS_STAGE_REQUEST, ENOMEM); return NULL; }
    gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_INPUT);
    gpiod_line_settings_set_edge_detection(s, GPIOD_LINE_EDGE_BOTH);
    gpiod_line_settings_set_active_low(s, active_low != 0);
    gpiod_line_settings_set_event_clock(s, GPIOD_LINE_CLOCK_MONOTONIC);
    switch (bias) {
    case CGS_BIAS_PULL_UP: gpiod_line_settings_set_bias(s, GPIOD_LINE_BIAS_PULL_UP); break;
    case CGS_BIAS_PULL_DOWN: gpiod_line_settings_set_bias(s, GPIOD_LINE_BIAS_PULL_DOWN); break;
    case CGS_BIAS_DISABLED: gpiod_line_settings_set_bias(s, GPIOD_LINE_BIAS_DISABLED); break;
    default: break;
    }
    cgs_line *h = cgs_request(chip_path, offset, s, consumer, 1, err);
    gpiod_line_settings_free(s);
    return h;
}

cgs_line *cgs_request_output(const char *chip_path, unsigned offset, int active_low, int initial,
                             const char *consumer, cgs_error *err) {
    struct gpiod_line_settings *s = gpiod_line_settings_new();
    if (!s) { cgs_fail(err, CGS_STAGE_REQUEST, ENOMEM); return NULL; }
    gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_OUTPUT);
    gpiod_line_settings_set_active_low(s, active_low != 0);
    gpiod_line_settings_set_output_value(s, initial ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
    cgs_line *h = cgs_request(chip_path, offset, s, consumer, 0, err);
    gpiod_line_settings_free(s);
    return h;
}

int cgs_event_fd(cgs_line *h) { return gpiod_line_request_get_fd(h->request); }

int cgs_read_edges(cgs_line *h, cgs_edge *out, int max) {
    if (max > CGS_EDGES_PER_READ_MAX) max = CGS_EDGES_PER_READ_MAX;
    int n = gpiod_line_request_read_edge_events(h->request, h->events, (size_t)max);
    if (n < 0) return errno == EAGAIN ? 0 : -1;
    for (int i = 0; i < n; i++) {
        struct gpiod_edge_event *ev = gpiod_edge_event_buffer_get_event(h->events, (unsigned long)i);
        out[i].rising = gpiod_edge_event_get_event_type(ev) == GPIOD_EDGE_EVENT_RISING_EDGE;
        out[i].timestamp_ns = gpiod_edge_event_get_timestamp_ns(ev);
    }
    return n;
}

int cgs_get_value(cgs_line *h) {
    enum gpiod_line_value v = gpiod_line_request_get_value(h->request, h->offset);
    return v == GPIOD_LINE_VALUE_ERROR ? -1 : v == GPIOD_LINE_VALUE_ACTIVE;
}

int cgs_set_value(cgs_line *h, int value) {
    return gpiod_line_request_set_value(h->request, h->offset, value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

void cgs_release(cgs_line *h) {
    if (!h) return;
    if (h->events) gpiod_edge_event_buffer_free(h->events);
    if (h->request) gpiod_line_request_release(h->request);
    free(h);
}
#endif
