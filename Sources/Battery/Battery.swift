// Battery: the unit's own battery, as pure logic (docs/power.md) — what the common fuel gauges
// of Pi battery boards say in their registers (MAX17048-class ModelGauge, INA219 current and
// voltage monitors, PiSugar 3), a lithium cell's charge from its voltage, and the monitor that
// turns readings into a state of charge, a drain, the time left, the alert levels and the
// decision to power off before the pack dies.
//
// No I/O and no clock: register values and instants come in as values. The board's driver
// (BoardHardware.I2CRegisterDevice, wired by BoardWiring.BatteryComponent) moves the bytes.
//
// Must not import: Foundation, Glibc, AppCore, Display, Screens, Device, BoardIO, BoardHardware, BoardWiring.
