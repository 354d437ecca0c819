#include "CI2CRegisters.h"
#include <errno.h>
#include <i2c/smbus.h>
#include <linux/i2c-dev.h>

/* libi2c 4.x returns -errno itself; older versions return -1 and set errno. */
static int result(int r) {
    if (r >= 0) return r;
    return r == -1 && errno != 0 ? -errno : r;
}

int ci2c_write_register(int fd, uint8_t reg, uint8_t value) {
    int r;
    do {
        errno = 0;
        r = i2c_smbus_write_byte_data(fd, reg, value);
    } while (r < 0 && (r == -EINTR || errno == EINTR));
    return r < 0 ? result(r) : 0;
}

int ci2c_read_register(int fd, uint8_t reg) {
    int r;
    do {
        errno = 0;
        r = i2c_smbus_read_byte_data(fd, reg);
    } while (r < 0 && (r == -EINTR || errno == EINTR));
    return result(r);
}

int ci2c_read_registers(int fd, uint8_t reg, uint8_t *out, uint8_t length) {
    if (length == 0 || length > I2C_SMBUS_BLOCK_MAX) return -EINVAL;
    int r;
    do {
        errno = 0;
        r = i2c_smbus_read_i2c_block_data(fd, reg, length, out);
    } while (r < 0 && (r == -EINTR || errno == EINTR));
    if (r >= 0 && r < length) return -EIO; /* a short read is a failed transfer */
    return result(r);
}

int ci2c_read_word(int fd, uint8_t reg) {
    int r;
    do {
        errno = 0;
        r = i2c_smbus_read_word_data(fd, reg);
    } while (r < 0 && (r == -EINTR || errno == EINTR));
    return result(r);
}
