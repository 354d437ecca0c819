// Journal: the crash-safe ride journal — record format and coding, segments, the group-commit
// writer, the recovery scan, and the storage it runs on as a port (`SegmentStorage`: simulated
// flash here, a directory in DeviceAdapters). Pure: storage comes in as a protocol.
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
