#ifndef CI2CREGISTERS_H
#define CI2CREGISTERS_H
#include <stdint.h>

/// Register access for sensors on the I2C bus (the barometer): SMBus byte and I2C-block
/// transfers through libi2c. Like the display's calls in CI2CShim.h, each returns 0 or a count on
/// success and a negative errno value on failure; EINTR is retried.

/// i2c_smbus_write_byte_data(fd, reg, value): writes one register.
int ci2c_write_register(int fd, uint8_t reg, uint8_t value);

/// i2c_smbus_read_byte_data(fd, reg): the register's value (0...255).
int ci2c_read_register(int fd, uint8_t reg);

/// i2c_smbus_read_i2c_block_data(fd, reg, length, out): `length` (1...32) consecutive
/// registers from `reg` (the chip auto-increments). Returns the count read.
int ci2c_read_registers(int fd, uint8_t reg, uint8_t *out, uint8_t length);

/// i2c_smbus_read_word_data(fd, reg): a 16-bit register as SMBus sends it, the first byte on the
/// wire in the low 8 bits (0...65535). A chip that sends its most significant byte first (the
/// fuel gauges) needs the bytes swapped.
int ci2c_read_word(int fd, uint8_t reg);
#endif
