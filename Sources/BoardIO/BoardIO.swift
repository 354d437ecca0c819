// BoardIO: Linux for the board layer — the `EventLoop` protocol with its epoll and manual
// implementations, timers, file descriptors, sockets (SOCK_SEQPACKET, the control socket
// server), serial ports, atomic files, the journal's segment directory, subprocesses, FAT
// images. It knows nothing about rides.
//
// Must not import: RideModel, Training, Sensors, AppCore, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
