// Sensors: bridge protocol, BLE and ANT+ decoders, the data source (issue 3).
