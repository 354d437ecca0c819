// Screens: what the rider sees — layouts as data, the renderer that draws a `ScreenModel` into a
// framebuffer (only what changed), the screen catalogue for docs and goldens, and the pipeline
// that puts renderer, framebuffer and a panel driver together (`PanelPipeline`). Pure.
//
// Must not import: Foundation, Glibc, Sensors, Journal, RideFiles, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
