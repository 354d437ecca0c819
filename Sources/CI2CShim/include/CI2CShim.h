#ifndef CI2CSHIM_H
#define CI2CSHIM_H
#include <stdint.h>
#include "CI2CRegisters.h" /* sensor registers (the barometer) */

/// libi2c (i2c-tools) and the i2c-dev ioctls for the display bus. Every function returns 0 (or
/// a file descriptor) on success and a negative errno value on failure; EINTR is retried.

/// open(path, O_RDWR | O_CLOEXEC) on /dev/i2c-N.
int ci2c_open(const char *path);

/// ioctl(fd, I2C_SLAVE, address): later transfers go to this 7-bit address.
int ci2c_set_address(int fd, int address);

/// i2c_smbus_write_i2c_block_data(fd, control, length, bytes): one I2C write of the address,
/// `control`, then `length` (1...32) bytes.
int ci2c_write_block(int fd, uint8_t control, const uint8_t *bytes, uint8_t length);

/// close(fd).
void ci2c_close(int fd);
#endif
