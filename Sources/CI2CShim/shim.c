#include "CI2CShim.h"
#include <errno.h>
#include <fcntl.h>
#include <i2c/smbus.h>
#include <linux/i2c-dev.h>
#include <sys/ioctl.h>
#include <unistd.h>

int ci2c_open(const char *path) {
    int fd;
    do { fd = open(path, O_RDWR | O_CLOEXEC); } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int ci2c_set_address(int fd, int address) {
    int r;
    do { r = ioctl(fd, I2C_SLAVE, address); } while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

int ci2c_write_block(int fd, uint8_t control, const uint8_t *bytes, uint8_t length) {
    if (length == 0 || length > I2C_SMBUS_BLOCK_MAX) return -EINVAL;
    int r;
    /* libi2c 4.x returns -errno itself; older versions return -1 and set errno. */
    do {
        errno = 0;
        r = i2c_smbus_write_i2c_block_data(fd, control, length, bytes);
    } while (r < 0 && (r == -EINTR || errno == EINTR));
    if (r >= 0) return 0;
    return r == -1 && errno != 0 ? -errno : r;
}

void ci2c_close(int fd) { close(fd); }
