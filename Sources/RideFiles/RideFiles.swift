// RideFiles: rides as files — the FIT encoder and reader, GPX and TCX, ride metadata, and the
// ride library (newest complete version per ride, atomic writes through the
// `RideFileOperations` port). Pure: file operations come in as a protocol.
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, Journal, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
