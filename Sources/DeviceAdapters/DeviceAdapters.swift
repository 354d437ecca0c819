// DeviceAdapters: the Device ports on a real directory, shared by the executables — the journal's
// segment files (`BoardJournal`), ride files written atomically (`BoardRideFiles`), the
// ride-active flag, the system wall clock and the stderr log, pairing's rewrite of the config
// file (`ConfigFileRewrite`). No hardware, no run loop.
//
// Must not import: BoardHardware, BoardWiring, Simulation, Screens, Display, Sensors.
