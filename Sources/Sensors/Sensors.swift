// Sensors: everything between raw sensor input and samples — the bridge protocol (frames,
// serial framing), the BLE GATT and ANT+ decoders, and the data source that pairs, ranks and
// tracks sources (radio sensors and onboard receivers alike). `SensorInputs` is the one owner of
// raw input; it emits RideModel's `SensorEvent`s. Pure: no sockets, no clock.
//
// Must not import: Foundation, Glibc, Training, AppCore, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
