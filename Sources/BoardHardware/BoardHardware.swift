// BoardHardware: GPIO buttons (libgpiod) and the I²C bus (libi2c) (issues 4, 6).
