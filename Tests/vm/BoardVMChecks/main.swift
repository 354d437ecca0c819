// board-vm-checks: the board layer against a real Linux kernel, run inside the test VM
// (Tests/vm, docs/testing.md). Not a unit test: it needs the kernel's simulated hardware
// (the project's ssd1306-sim module, i2c-stub, gpio-sim), which only the VM has. The VM tests
// build it against libgpiod v1 and again against v2 and run each build in the guest.
//
//   board-vm-checks gpio --chip /dev/gpiochipN --sim DIR --lines N --api 1|2
//   board-vm-checks i2c --bus N --debugfs DIR [--stub-bus M]
//   board-vm-checks streams --bus N --debugfs DIR [--seed S] [--count K]
//   board-vm-checks memlcd --bus B --debugfs DIR [--speed HZ]   (the memlcd-sim SPI panel)
//
// Prints "ok <check>" or "FAIL <check>: <why>" per check, and exits 1 if any failed.
import Glibc

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    Checks.usage("a command: gpio, i2c, streams or memlcd")
}
arguments.removeFirst()
let options = Options(arguments)

switch command {
case "gpio":
    GPIOChecks(chip: options.string("chip"), simDirectory: options.string("sim"),
               lineCount: UInt32(options.int("lines")), expectedAPI: options.int("api")).run()
case "i2c":
    I2CChecks(bus: options.int("bus"), debugfs: options.string("debugfs"),
              stubBus: options.optionalInt("stub-bus")).run()
case "streams":
    StreamChecks(bus: options.int("bus"), debugfs: options.string("debugfs"),
                 seed: UInt64(options.optionalInt("seed") ?? 0x5EED), count: options.optionalInt("count") ?? 200).run()
case "memlcd":
    MemLCDChecks(bus: options.int("bus"), debugfs: options.string("debugfs"), speedHz: options.optionalInt("speed") ?? 1_000_000).run()
default:
    Checks.usage("gpio, i2c, streams or memlcd, not \(command)")
}
Checks.finish()
