// Configuration: the config file — a small TOML reader, the typed `DeviceConfig` with its
// defaults, validation with messages that say what to change, and rendering back to text. It
// knows nothing of the app's types (Device's ConfigMapping maps it onto them).
//
// Must not import: Foundation, Glibc, RideModel, Training, Sensors, AppCore, Journal, RideFiles, Display, Screens, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
