// Display: framebuffer, fonts, SSD1306 driver and emulator (issue 4).
