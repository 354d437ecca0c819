// Training: what the rider's physiology and plan make of the ride — preferred zones from the
// rider profile, target-zone alerts, auto-pause and auto-lap monitors. Pure; fed by AppCore.
//
// Must not import: Foundation, Glibc, Sensors, AppCore, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
