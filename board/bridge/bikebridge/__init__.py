"""bikebridge: forwards raw ANT+ and BLE sensor payloads to the bike computer.

The radio modules (`ble`, `ant`) import bleak and openant only when they start, so the protocol,
the transports and the replay tool work without them (and without radios).
"""
__version__ = "1.0.0"
