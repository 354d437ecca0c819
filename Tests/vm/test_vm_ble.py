"""BLE end to end on a real BlueZ stack, in the VM (Debian's kernel has Bluetooth only as
modules; this machine's does not have it at all): hci_vhci with five virtual controllers
(btvirt), dbus-daemon and bluetoothd; the project's simulated sensors (Tests/vm/ble/sim_sensors.py:
heart rate with RR, cycling power with wheel and crank data, speed and cadence, each with a
battery, values from a recorded ride; and a device that advertises cycling power without the
measurement) as GATT servers through BlueZ's D-Bus API on four of them; on the fifth, the
bridge as a board runs it (`python -m bikebridge --config`, its venv from
board/bridge/requirements.txt) forwarding to the real `bikecomputer run`.

Tests/vm/ble/guest_ble.py rides in the guest and records; the tests below check the record.
What this cannot show (radio range, real bonding, LE Secure Connections, which fail under QEMU
here): docs/sensors.md."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

import vmlib
from conftest import prepared

BLE_MODULES = ["hci_vhci", "algif_skcipher", "algif_hash", "ecb", "cmac"]
HOST_PACKAGES = ["bluez", "bluez-test-tools", "dbus"]
BRIDGE = vmlib.REPO / "board" / "bridge"
RECORD_S = 20


def bridge_venv() -> pathlib.Path:
    """The bridge's venv from its pinned requirements (as board/install.sh makes it), cached by
    the requirements' hash."""
    req = BRIDGE / "requirements.txt"
    venv = vmlib.CACHE / f"bridge-venv-{vmlib.file_hash(req)}"
    if (venv / "ready").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    vmlib.log(f"making the bridge's venv ({venv.name})")
    vmlib.sh([sys.executable if pathlib.Path(sys.executable).name.startswith("python3") else "python3", "-m", "venv", str(venv)])
    vmlib.sh([str(venv / "bin" / "pip"), "install", "-q", "-r", str(req)], timeout=900)
    (venv / "ready").write_text(req.read_text())
    return venv


def ride_values() -> pathlib.Path:
    """Per-second values for the simulated sensors from the recorded rides (fitdecode)."""
    out = vmlib.CACHE / "ble" / "ride.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    script = vmlib.REPO / "Tests/vm/ble/ride_values.py"
    vmlib.sh([sys.executable, str(script), str(out)], timeout=120)
    return out


@pytest.fixture(scope="module")
def ble_ride(amd64, swift_bin):
    prepared("the BLE packages on the host", vmlib.ensure_packages, HOST_PACKAGES)
    venv = prepared("the bridge's venv", bridge_venv)
    ride = prepared("the ride values", ride_values)
    vm = prepared("the amd64 guest", vmlib.Machine, amd64, BLE_MODULES, [])
    script = f"""
set -u
mount -t tmpfs tmpfs /host/var/lib/bluetooth || {{ echo "no /var/lib/bluetooth on the host: install bluez"; exit 93; }}
inhost /usr/bin/python3 Tests/vm/ble/guest_ble.py --bin {swift_bin / 'bikecomputer'} --venv {venv} --out /run/vm \\
    --repo {vmlib.REPO} --ride {ride} --record-s {RECORD_S}
"""
    result = vm.run(script, timeout_s=400, name="ble")
    rec_file = result.outdir / "ble.json"
    record = json.loads(rec_file.read_text()) if rec_file.exists() else None
    assert result.ok and record is not None and not record["errors"], \
        f"{record and record['errors']}\n{result.describe()}\n{logs(result)}"
    return result, record


def logs(result: vmlib.Result) -> str:
    out = []
    for name in ("bridge", "app", "sim", "bluetoothd"):
        p = result.outdir / f"{name}.log"
        if p.exists():
            out.append(f"--- {name}.log (tail)\n{p.read_text(errors='replace')[-3000:]}")
    return "\n".join(out)


def sent(result: vmlib.Result) -> list[dict]:
    return [json.loads(line) for line in (result.outdir / "sent.jsonl").read_text().splitlines() if line]


def test_all_three_sensors_connect_and_nothing_crashes(ble_ride):
    result, r = ble_ride
    assert r["alive"] == {"btvirt": True, "bluetoothd": True, "sim": True, "app": True, "bridge": True}, r["alive"]
    assert r["exit"]["bridge"] == 0 and r["exit"]["app"] == 0, r["exit"]
    print(json.dumps(r["steps"], indent=1))
