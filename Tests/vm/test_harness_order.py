"""The harness's scheduling of guests, without booting one: what a system guest waits for must not
depend on the order pytest runs the test files in, and every wait ends (bounded) saying what it
waited for.

Seen: `pytest Tests/vm/test_vm_system.py Tests/vm/test_vm_run.py Tests/vm/test_vm_ble.py ...`
(the files named one by one, test_vm_system.py first) ran its guests and then slept: the main
thread waited in test_vm_system.py's fixture for the system guests, and they waited (900 s per
boot, one boot after another) for test_vm_ble.py's fixture, which only the main thread could run;
`bash Tests/vm/run` (alphabetical: ble before system) passed. The first test runs that order with
the real conftest.py and system.py, and stand-in guests that wait as System.run does."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import system
import system_fixtures
import vmlib

VM_DIR = pathlib.Path(__file__).resolve().parent

CONFTEST = f"""
import importlib.util, sys
sys.path.insert(0, {str(VM_DIR)!r})
spec = importlib.util.spec_from_file_location("vm_conftest", {str(VM_DIR / 'conftest.py')!r})
vm_conftest = importlib.util.module_from_spec(spec)
sys.modules["vm_conftest"] = vm_conftest
spec.loader.exec_module(vm_conftest)
from vm_conftest import *  # noqa: F401,F403 - the fixtures and hooks of the VM tests
"""

# A system test module: its guest waits for the other guests (as System.run does), then "boots".
SYSTEM_MODULE = """
import time
import pytest
import system
import system_fixtures as sf
from vm_conftest import guest_result, launcher

@launcher(__name__, order=1)
def _start(request):
    def guest():
        started = time.monotonic()
        system.wait_for_other_guests()
        return time.monotonic() - started
    return sf.Background(guest, "a stand-in system guest")

@pytest.fixture(scope="module")
def waited(guests):
    return guest_result(guests, __name__)

def test_the_system_guest_booted_without_waiting(waited):
    assert waited < 5, waited
"""

# The BLE module as it is: its guest is a launcher; its module fixture reads the result.
BLE_MODULE = """
import pytest
import vmlib
from vm_conftest import guest_result, launcher

class Done:
    def wait(self):
        return vmlib.Result(0, "", "", "", 0.0, False, None, [])

@launcher(__name__, order=1)
def launch(request):
    return Done()

@pytest.fixture(scope="module")
def ble_ride(request):
    return guest_result(request.getfixturevalue("guests"), __name__)

def test_ble(ble_ride):
    assert ble_ride.ok
"""


@pytest.mark.parametrize("order", [["test_vm_system.py", "test_vm_ble.py"], ["test_vm_ble.py", "test_vm_system.py"]],
                         ids=["system-first", "ble-first"])
def test_system_guests_wait_for_nothing_pytest_runs_later(tmp_path, order):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_vm_system.py").write_text(textwrap.dedent(SYSTEM_MODULE))
    (tmp_path / "test_vm_ble.py").write_text(textwrap.dedent(BLE_MODULE))
    started = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *order], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"pytest {' '.join(order)} hung (killed after {time.monotonic() - started:.0f} s):\n{e.stdout}\n{e.stderr}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "2 passed" in r.stdout, r.stdout[-2000:]


def test_a_slot_wait_is_bounded_and_names_the_holders():
    slots = system._Slots(1)
    slots.acquire("faults")
    started = time.monotonic()
    with pytest.raises(vmlib.VMUnavailable, match=r"clock: no system guest slot came free within 1 s \(held by faults"):
        slots.acquire("clock", wait_s=1.0)
    assert time.monotonic() - started < 3
    slots.release("faults")
    slots.acquire("clock", wait_s=1.0)  # free again, and the failed waiter left no trace
    assert slots.holders == ["clock"] and slots.waiting == []


def test_a_measuring_guest_shares_the_host_with_one_other_at_most():
    slots = system._Slots(3)
    slots.acquire("faults")
    slots.acquire("powercut-loop")
    with pytest.raises(vmlib.VMUnavailable, match=r"latency: no system guest slot came free within 1 s"):
        slots.acquire("latency", wait_s=1.0)  # two others run: it waits
    slots.release("powercut-loop")
    slots.acquire("latency", wait_s=1.0)  # one other: it runs
    assert slots.free == 0
    with pytest.raises(vmlib.VMUnavailable):
        slots.acquire("clock", wait_s=1.0)  # and nothing else joins it
    slots.release("latency")
    slots.acquire("clock", wait_s=1.0)
    assert slots.free == 1 and slots.holders == ["faults", "clock"]


def test_background_work_and_shared_values_are_waited_for_boundedly():
    never = threading.Event()
    work = system_fixtures.Background(lambda: never.wait(30), "a guest that never ends")
    with pytest.raises(vmlib.VMUnavailable, match="waited 1 s for a guest that never ends"):
        work.wait(timeout_s=1)
    never.set()
    assert work.wait(timeout_s=10) is True


def test_a_cache_lock_held_by_another_process_is_waited_for_boundedly(monkeypatch, tmp_path):
    monkeypatch.setattr(vmlib, "CACHE", tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(VM_DIR)!r})
        import vmlib, pathlib
        vmlib.CACHE = pathlib.Path({str(tmp_path)!r})
        with vmlib.cache_lock("held-elsewhere"):
            print("held", flush=True)
            time.sleep(30)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(vmlib.VMUnavailable, match=rf"the .build/vm lock held-elsewhere: held by process {holder.pid} .*for 1 s"):
            with vmlib.cache_lock("held-elsewhere", wait_s=1):
                pass
    finally:
        holder.kill()
        holder.wait()
    with vmlib.cache_lock("held-elsewhere", wait_s=5):
        pass  # free once its holder has gone
