// RideModel: the vocabulary every pure module shares and the ride itself — time values
// (`MonotonicInstant`, wall-clock anchors), quantities and samples, the sensor roles, states and
// events (`SensorVocabulary.swift`), the session lifecycle, ride events and records, the
// `RideBuilder` and its statistics, zones, `RingBuffer`, `SplitMix64`. Pure: time comes in as a
// value, nothing is read from the system.
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
