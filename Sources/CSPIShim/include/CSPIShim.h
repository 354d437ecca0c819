#ifndef CSPISHIM_H
#define CSPISHIM_H
#include <stdint.h>

/// The spidev ioctls for an SPI display (/dev/spidevB.C). Every function returns 0 (or a file
/// descriptor, or a count) on success and a negative errno value on failure; EINTR is retried.

/// open(path, O_RDWR | O_CLOEXEC).
int cspi_open(const char *path);

/// SPI_IOC_WR_MODE32 (`mode`: SPI_MODE_0... | SPI_CS_HIGH ...), SPI_IOC_WR_BITS_PER_WORD (8) and
/// SPI_IOC_WR_MAX_SPEED_HZ, then reads each back: -EINVAL when the controller did not take one
/// (a mode bit it cannot do).
int cspi_configure(int fd, uint32_t mode, uint32_t speed_hz);

/// One SPI_IOC_MESSAGE(1): `length` bytes out with chip select asserted for all of them, at
/// `speed_hz`, chip select held `cs_hold_us` after the last bit. Returns 0.
int cspi_write(int fd, const uint8_t *bytes, uint32_t length, uint32_t speed_hz, uint16_t cs_hold_us);

/// The mode bits: SPI_CPHA, SPI_CPOL, SPI_CS_HIGH, SPI_LSB_FIRST (for Swift, which cannot see
/// the kernel header's macros).
uint32_t cspi_mode_cpha(void);
uint32_t cspi_mode_cpol(void);
uint32_t cspi_mode_cs_high(void);
uint32_t cspi_mode_lsb_first(void);

/// close(fd).
void cspi_close(int fd);
#endif
