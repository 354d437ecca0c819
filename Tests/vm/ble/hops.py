"""Bytes per notification on each hop of the BLE ride in the VM, from what guest_ble.py captured
with --measure-s (btmon's btsnoop file of every controller, dbus-monitor's pcap of the system
bus) and the notifications the simulated sensors sent meanwhile.

    python3 Tests/vm/ble/hops.py .build/vm/runs/ble-XXXX

Hops, for one notification of a sensor:
- air: the ATT notification in an HCI ACL packet as the central's controller hands it to the
  host (HCI ACL header + L2CAP header + ATT opcode, handle and value; on a Pi's UART one more
  H4 type byte) - measured on hci0;
- bluetoothd -> bridge (or app): the value alone, one read of the AcquireNotify socket - and no
  D-Bus message (counted: D-Bus messages about the central's characteristics while recording);
- bridge -> app: a data frame, 21 bytes + the value (none when the app reads the socket itself);
- simulator -> bluetoothd (the sensors' side, which a board does not have): a D-Bus
  PropertiesChanged through dbus-daemon.
"""
import json
import pathlib
import struct
import sys

ACL_TX, ACL_RX = 4, 5  # btsnoop monitor opcodes
ATT_NOTIFY, ATT_MULTI_NOTIFY = 0x1B, 0x23


def btsnoop(path: pathlib.Path):
    """(index, opcode, payload) of every record of a btmon -w file (datalink 2001, monitor)."""
    data = path.read_bytes()
    if data[:8] != b"btsnoop\0":
        raise ValueError(f"{path}: not a btsnoop file")
    _, datalink = struct.unpack_from(">II", data, 8)
    i = 16
    while i + 24 <= len(data):
        orig, incl, flags, drops, ts = struct.unpack_from(">IIIIq", data, i)
        payload = data[i + 24:i + 24 + incl]
        i += 24 + incl
        if datalink == 2001:
            yield flags >> 16, flags & 0xFFFF, payload


def air(path: pathlib.Path, index: int = 0):
    """ACL packets carrying ATT notifications received by controller `index`: count, bytes."""
    count = size = 0
    for idx, op, p in btsnoop(path):
        if idx != index or op != ACL_RX or len(p) < 9:
            continue
        l2cap_len, cid = struct.unpack_from("<HH", p, 4)
        if cid == 0x0004 and p[8] in (ATT_NOTIFY, ATT_MULTI_NOTIFY):
            count += 1
            size += len(p)
        elif cid >= 0x0040 and len(p) >= 11 and p[10] in (ATT_NOTIFY, ATT_MULTI_NOTIFY):  # EATT (credit-based channel, SDU length first)
            count += 1
            size += len(p)
    return count, size


def pcap(path: pathlib.Path):
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    i = 24
    while i + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from(endian + "IIII", data, i)
        yield data[i + 16:i + 16 + incl]
        i += 16 + incl


def dbus(path: pathlib.Path):
    """D-Bus messages that carry a characteristic's value: from the simulator (its GATT objects)
    and about the central's devices (/org/bluez/hci0/dev_...)."""
    sim = central = 0
    sim_bytes = central_bytes = 0
    for m in pcap(path):
        if b"PropertiesChanged" not in m or b"Value" not in m:
            continue
        if b"/bikesim/" in m:
            sim += 1
            sim_bytes += len(m)
        elif b"/org/bluez/hci0/dev_" in m:
            central += 1
            central_bytes += len(m)
    return sim, sim_bytes, central, central_bytes


def summary(run: pathlib.Path) -> dict:
    record = json.loads((run / "ble.json").read_text())
    cap = record["capture"]
    sent = sum(n for s in cap["notifications"].values() for u, n in s.items() if u != "2a19")
    values = [len(bytes.fromhex(e["hex"])) for e in map(json.loads, (run / "sent.jsonl").read_text().splitlines())
              if e["u"] != "2a19" and not e.get("bad")]
    value = sum(values) / len(values)
    n_air, b_air = air(run / "hci.btsnoop")
    sim_n, sim_b, central_n, central_b = dbus(run / "dbus.pcap")
    return {"seconds": cap["seconds"], "notifications_sent": sent, "value_bytes_mean": round(value, 1),
            "air_acl_packets": n_air, "air_bytes_per_notification": round(b_air / max(1, n_air), 1),
            "uart_bytes_per_notification": round(b_air / max(1, n_air) + 1, 1),
            "bluetoothd_to_reader_bytes": round(value, 1),
            "dbus_messages_per_notification_central": round(central_n / max(1, sent), 3),
            "dbus_bytes_per_notification_simulator": round(sim_b / max(1, sim_n), 1),
            "bridge_to_app_frame_bytes": round(21 + value, 1)}


if __name__ == "__main__":
    print(json.dumps(summary(pathlib.Path(sys.argv[1])), indent=1))
