// BoardHardware: the board's devices behind typed Swift wrappers.
// - GPIO lines (buttons, buzzer/LED) through libgpiod v1 or v2 (CGpiodShim): GPIOLines.swift,
//   GPIOButtons.swift.
// - The I²C display bus (libi2c, CI2CShim) and the SPI display device (spidev, CSPIShim).
// This layer knows nothing about rides: buttons are indices, edges are levels with timestamps.
//
// Must not import: RideModel, Training, Sensors, AppCore, Journal, RideFiles, Screens, Control, Device, DeviceAdapters, BoardWiring, Simulation.
import BoardIO
