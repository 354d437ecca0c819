// Display: pixels to panels — the 1-bit framebuffer (any size up to 800×512, in bands of 8
// rows), fonts and drawing, the link a panel hangs on (`DisplayLink`: I²C with a control byte,
// SPI with a D/C line), the panel drivers (`PanelDriver`: SSD1306/SH1106, Sharp memory LCD), the
// SSD1306 emulator and PNG/PBM encoding. Knows nothing of rides or screens.
//
// Must not import: Foundation, Glibc, RideModel, Training, Sensors, AppCore, Journal, RideFiles, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
