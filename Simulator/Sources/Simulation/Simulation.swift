// Simulation: the simulator's library — synthetic rides, scenarios, simulated sensors that send
// real bridge bytes to the runtime, the emulated screen, simulated or directory storage, the
// headless and replay runners (`DeviceRuntime.boot`, the board's start-up), summary.json and the
// text screen. It never links the hardware libraries.
//
// Must not import: BoardHardware, BoardWiring, BoardIO, Glibc.
