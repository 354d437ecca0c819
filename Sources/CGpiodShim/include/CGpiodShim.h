#ifndef CGPIODSHIM_H
#define CGPIODSHIM_H
#include <stdint.h>

/// One small API over libgpiod, compiled against whichever gpiod.h is installed:
/// the v1 API (libgpiod 1.x: Debian 12, Raspberry Pi OS Bookworm) or the v2 API (libgpiod 2.x:
/// Debian 13). v1 is recognised by GPIOD_LINE_BULK_MAX_LINES, which v2 removed.
/// One handle = one requested line.

/// 1 or 2: the libgpiod API this shim was compiled against.
int cgs_api_version(void);
/// The version of the libgpiod linked at run time, as the library reports it ("1.6.3", "2.1.3").
const char *cgs_library_version(void);

typedef struct cgs_line cgs_line;

/// Where a request failed and why.
enum {
    CGS_STAGE_NONE = 0,
    CGS_STAGE_OPEN_CHIP = 1,   // errno: ENOENT (no such chip), EACCES (permission), ...
    CGS_STAGE_GET_LINE = 2,    // errno: EINVAL (offset beyond the chip's lines)
    CGS_STAGE_REQUEST = 3,     // errno: EBUSY (consumer holds it), EACCES, EINVAL (flags)
    CGS_STAGE_EVENT_FD = 4,
};

/// bias values
enum { CGS_BIAS_AS_IS = 0, CGS_BIAS_PULL_UP = 1, CGS_BIAS_PULL_DOWN = 2, CGS_BIAS_DISABLED = 3 };

typedef struct {
    int stage;
    int error;            // errno
    unsigned line_count;  // lines the chip has (when the chip opened), 0 otherwise
    char consumer[64];    // who holds the line (EBUSY), "" if unknown
} cgs_error;

/// Requests `offset` on `chip_path` (e.g. /dev/gpiochip0) as an input with edge events on
/// both edges, the given bias and active-low setting; the event fd is non-blocking.
cgs_line *cgs_request_input(const char *chip_path, unsigned offset, int active_low, int bias,
                            const char *consumer, cgs_error *err);
/// Requests `offset` as an output (buzzer or LED), initially `initial` (logical value).
cgs_line *cgs_request_output(const char *chip_path, unsigned offset, int active_low, int initial,
                             const char *consumer, cgs_error *err);

/// The file descriptor that becomes readable when edge events are queued.
int cgs_event_fd(cgs_line *line);

typedef struct {
    int rising;             // 1: became active (pressed, honouring active-low), 0: inactive
    uint64_t timestamp_ns;  // the kernel's timestamp (CLOCK_MONOTONIC on kernels >= 5.7)
} cgs_edge;

/// Reads up to `max` queued edge events without blocking; returns the count (0 when none),
/// -1 with errno on error.
int cgs_read_edges(cgs_line *line, cgs_edge *out, int max);
/// The line's logical value (1 active), -1 with errno on error.
int cgs_get_value(cgs_line *line);
/// Sets an output line's logical value; 0 or -1 with errno.
int cgs_set_value(cgs_line *line, int value);
/// Releases the line and frees the handle.
void cgs_release(cgs_line *line);
#endif
