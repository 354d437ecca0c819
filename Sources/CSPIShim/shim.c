#include "CSPIShim.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/spi/spidev.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int cspi_open(const char *path) {
    int fd;
    do { fd = open(path, O_RDWR | O_CLOEXEC); } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

static int ioctl_retry(int fd, unsigned long request, void *arg) {
    int r;
    do { r = ioctl(fd, request, arg); } while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : r;
}

int cspi_configure(int fd, uint32_t mode, uint32_t speed_hz) {
    uint8_t bits = 8;
    int r = ioctl_retry(fd, SPI_IOC_WR_MODE32, &mode);
    if (r < 0) return r;
    if ((r = ioctl_retry(fd, SPI_IOC_WR_BITS_PER_WORD, &bits)) < 0) return r;
    if ((r = ioctl_retry(fd, SPI_IOC_WR_MAX_SPEED_HZ, &speed_hz)) < 0) return r;
    uint32_t mode_back = 0, speed_back = 0;
    uint8_t bits_back = 0;
    if ((r = ioctl_retry(fd, SPI_IOC_RD_MODE32, &mode_back)) < 0) return r;
    if ((r = ioctl_retry(fd, SPI_IOC_RD_BITS_PER_WORD, &bits_back)) < 0) return r;
    if ((r = ioctl_retry(fd, SPI_IOC_RD_MAX_SPEED_HZ, &speed_back)) < 0) return r;
    if (mode_back != mode || bits_back != 8 || speed_back != speed_hz) return -EINVAL;
    return 0;
}

int cspi_write(int fd, const uint8_t *bytes, uint32_t length, uint32_t speed_hz, uint16_t cs_hold_us) {
    struct spi_ioc_transfer t;
    memset(&t, 0, sizeof t);
    t.tx_buf = (unsigned long)bytes;
    t.len = length;
    t.speed_hz = speed_hz;
    t.bits_per_word = 8;
    t.delay_usecs = cs_hold_us;
    int r = ioctl_retry(fd, SPI_IOC_MESSAGE(1), &t);
    if (r < 0) return r;
    return (uint32_t)r == length ? 0 : -EIO;
}

uint32_t cspi_mode_cpha(void) { return SPI_CPHA; }
uint32_t cspi_mode_cpol(void) { return SPI_CPOL; }
uint32_t cspi_mode_cs_high(void) { return SPI_CS_HIGH; }
uint32_t cspi_mode_lsb_first(void) { return SPI_LSB_FIRST; }

void cspi_close(int fd) { close(fd); }
