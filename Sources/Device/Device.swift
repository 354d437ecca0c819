// Device: the runtime every front end shares (`DeviceRuntime`) — it owns the app core and the
// sensor inputs, takes every input through one API (raw sensor input, button edges, control
// lines, time), boots the same way everywhere, and carries out the core's effects through ports
// (journal, ride archive, screen, alert line, log). Also the flash journal port over Journal, the
// button debouncer and the pure mapping of the config file onto the app's settings. It knows
// nothing of epoll, GPIO or files.
//
// Must not import: Foundation, Glibc, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation, Screens.
