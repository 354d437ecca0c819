"""BLE through BlueZ with bleak: connects to each paired address, subscribes to the measurement
characteristics it has, and forwards every notification's raw value. Reconnects forever."""
import asyncio
import logging

from . import protocol

log = logging.getLogger("bikebridge.ble")

# 16-bit UUIDs the app decodes; notifications for the first four, reads for the feature.
NOTIFY = {0x2A37: "heart_rate", 0x2A5B: "csc", 0x2A63: "cycling_power", 0x2A19: "battery"}
READ = {0x2A65: "cycling_power_feature", 0x2A19: "battery"}
RECONNECT_S = 5.0


def uuid16(u: int) -> str:
    return f"0000{u:04x}-0000-1000-8000-00805f9b34fb"


async def run_sensor(bridge, address: str, random: bool = False) -> None:
    from bleak import BleakClient  # lazy: tests and replay do not need bleak

    sensor = protocol.BleId(address.upper(), random)
    while True:
        bridge.link(sensor, 0, protocol.LINK_SEARCHING)
        disconnected = asyncio.Event()
        try:
            async with BleakClient(address, disconnected_callback=lambda _c: disconnected.set()) as client:
                bridge.link(sensor, 0, protocol.LINK_CONNECTED)
                available = {c.uuid.lower() for s in client.services for c in s.characteristics}
                for u in READ:
                    if uuid16(u) in available:
                        try:
                            bridge.notify(sensor, u, bytes(await client.read_gatt_char(uuid16(u))))
                        except Exception as e:  # a read failure is not fatal
                            log.warning("%s: reading %04x failed: %s", address, u, e)
                for u in NOTIFY:
                    if uuid16(u) in available:
                        await client.start_notify(uuid16(u), lambda _ch, value, u=u: bridge.notify(sensor, u, bytes(value)))
                await disconnected.wait()
        except Exception as e:
            log.warning("%s: %s; retrying in %.0f s", address, e, RECONNECT_S)
        bridge.link(sensor, 0, protocol.LINK_DISCONNECTED)
        await asyncio.sleep(RECONNECT_S)


async def run(bridge, addresses) -> None:
    await asyncio.gather(*(run_sensor(bridge, a) for a in addresses))
