// Configuration: the config file — a small TOML reader, the typed `DeviceConfig` with its
// defaults, validation with messages that say what to change, and rendering back to text. It
// knows nothing of the app's types (Device's ConfigMapping maps it onto them) but the sensor
// vocabulary (RideModel's `SensorKind`: a [[sensor]]'s role is one, pairing writes one).
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, Journal, RideFiles, Display, Screens, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
