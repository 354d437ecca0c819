// Positioning: where the ride goes and how it climbs — gpsd's JSON reports (GpsdReport), the fix
// rules and the GPS odometer (GpsReceiver, Geodesy), the BMP280's register map and compensation
// (BMP280), altitude from pressure, its calibration from GPS, total ascent/descent with
// hysteresis and grade (Altimetry), and the track so far for the map page (Breadcrumb). Pure: it
// reads bytes and values with their instants; no sockets, no I²C, no clock. docs/gps.md.
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
