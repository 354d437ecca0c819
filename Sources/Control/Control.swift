// Control: the control socket's language, shared by the device and its clients (`ctl`, the
// companion) — the line protocol (requests, replies), the event stream for subscribers, the
// status report and the JSON writer they are written with, `JSONValue` (the companion reads and
// writes its JSON through it, without Foundation's JSONSerialization), `RideObserver`. Pure: it reads
// AppCore's values (commands, effects, the screen value); a client links it alone.
//
// Must not import: Foundation, Glibc, Sensors, Journal, RideFiles, Display, Screens, Configuration, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
