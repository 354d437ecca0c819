"""Issue 27: the ANT+ radio survives its stick. A stick that fails (openant's loop raises, its
reader thread dies, USB errors keep coming, the stick leaves the bus) ends the radio's session;
the channels are reported disconnected and the stick is opened again with the paired channels,
while the bridge process (and its BLE side) goes on. And every call the radio's threads make
on the bridge runs on the bridge's event loop thread (asyncio and the transport are not
thread-safe). Driven by a fake openant whose successive Nodes follow a script each."""
import argparse
import asyncio
import logging
import sys
import threading
import time
import types

import pytest

from bikebridge import ant, protocol
from bikebridge.bridge import Bridge

import fake_openant as fake_openant_module

HR_PAGE = [0x04, 0xFF, 0, 0xFE, 0, 1, 7, 0x48]


class USBError(Exception):
    """Named as pyusb's: openant logs it by its type."""


def until(predicate, timeout_s=10.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"{what}: not within {timeout_s} s")


class Recorder:
    """The bridge's send: each frame parsed, with the thread that sent it."""

    def __init__(self):
        self.frames = []
        self.threads = set()

    def __call__(self, frame) -> bool:
        self.frames.append(protocol.parse(bytes(frame)))
        self.threads.add(threading.get_ident())
        return True

    def of(self, kind):
        return [f for f in self.frames if f.kind == kind]


def fake_openant(scripts):
    """openant whose n-th Node runs scripts[n] (the last one again after that) as its start();
    "absent" makes that Node() fail as openant does without a stick."""
    nodes = []

    class FakeNode:
        def __init__(self):
            script = scripts[min(len(nodes), len(scripts) - 1)]
            nodes.append(script)
            if script == "absent":
                raise RuntimeError("DriverNotFound: no ANT+ stick")
            self.script = script
            self.channels = []
            self.running = True
            # openant's reader thread: alive (the main thread stands in), or ended.
            reader = threading.main_thread()
            if script is reader_died:
                reader = threading.Thread(target=lambda: None)
                reader.start()
                reader.join()
            self.ant = types.SimpleNamespace(_worker_thread=reader)

        def set_network_key(self, n, key): pass

        def new_channel(self, ctype, network, ext_assign):
            c = fake_openant_module.FakeChannel()
            self.channels.append(c)
            return c

        def start(self):
            until(lambda: self.channels and all(c.opened for c in self.channels), what="the paired channels open")
            self.script(self)

        def stop(self):
            self.running = False

    return fake_openant_module.modules(FakeNode), nodes


def fails_after_a_page(node):
    node.channels[0].on_broadcast_data(HR_PAGE)
    raise USBError("[Errno 19] No such device (it may have been disconnected)")


def serves_until_stopped(node):
    while node.running:
        node.channels[0].on_broadcast_data(HR_PAGE)
        time.sleep(0.02)


def reader_died(node):
    serves_until_stopped(node)


def usb_errors_forever(node):
    """openant's reader on a stick that was reset: it logs each USB error and reads again."""
    log = logging.getLogger(ant.OPENANT_LOGGER)
    while node.running:
        log.warning("%s, %r", USBError, (19, "No such device (it may have been disconnected)"))
        time.sleep(0.001)


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(ant, "RESTART_DELAYS_S", (0.05, 0.1), raising=False)
    monkeypatch.setattr(ant, "HEALTH_CHECK_S", 0.05, raising=False)


def radio_with(monkeypatch, scripts, **attrs):
    modules, nodes = fake_openant(scripts)
    for name, m in modules.items():
        monkeypatch.setitem(sys.modules, name, m)
    rec = Recorder()
    bridge = Bridge(rec, protocol.RADIO_ANT, clock=lambda: 0, bridge_id=1)
    radio = ant.AntRadio(bridge)
    radio.restart_delays = (0.05, 0.1)
    for k, v in attrs.items():
        setattr(radio, k, v)
    return radio, rec, nodes


def links(rec):
    return [f.link for f in rec.of(protocol.KIND_LINK)]


def pages_from_session(rec, nodes, n):
    return len(nodes) >= n and len(rec.of(protocol.KIND_DATA)) >= n + 3


@pytest.mark.parametrize("failure", [fails_after_a_page, reader_died, usb_errors_forever], ids=lambda f: f.__name__)
def test_a_failing_stick_is_opened_again_with_its_channels(monkeypatch, quick, failure):
    radio, rec, nodes = radio_with(monkeypatch, [failure, serves_until_stopped])
    radio.set_paired([(120, 0, 0)])
    radio.start()
    try:
        until(lambda: len(nodes) >= 2 and len(rec.of(protocol.KIND_DATA)) >= 3, what="pages from the stick opened again")
        until(lambda: protocol.LINK_SEARCHING in links(rec)[1:], what="the channel searching again")
    finally:
        radio.stop()
    states = links(rec)
    assert states[0] == protocol.LINK_SEARCHING and protocol.LINK_DISCONNECTED in states, \
        f"the app is told the channel went and came back: {states}"
    assert states.index(protocol.LINK_DISCONNECTED) < len(states) - 1 - states[::-1].index(protocol.LINK_SEARCHING)
    assert radio.restarts >= 1 and radio.sessions >= 2


def test_an_unplugged_stick_is_tried_again_until_it_is_back(monkeypatch, quick):
    present = {"yes": True}
    radio, rec, nodes = radio_with(monkeypatch, [serves_until_stopped, "absent", "absent", serves_until_stopped],
                                   stick_present=lambda: present["yes"])
    radio.set_paired([(120, 0, 0)])
    radio.start()
    try:
        until(lambda: rec.of(protocol.KIND_DATA), what="pages from the first session")
        present["yes"] = False  # pulled out
        until(lambda: protocol.LINK_DISCONNECTED in links(rec), what="the channel reported lost")
        until(lambda: len(nodes) >= 3, what="opening tried again while it is out")
        present["yes"] = True
        n = len(rec.of(protocol.KIND_DATA))
        until(lambda: len(nodes) >= 4 and len(rec.of(protocol.KIND_DATA)) > n + 2, what="pages once it is back")
    finally:
        radio.stop()
    assert radio.sessions == 2


def test_the_radio_calls_the_bridge_on_the_event_loop_thread(monkeypatch):
    """The ANT+ threads (openant's loop, the control thread) never call the bridge themselves:
    a frame they cause is sent from the loop's thread (Runner.start_ant)."""
    from bikebridge.__main__ import Runner
    modules, nodes = fake_openant([serves_until_stopped])
    for name, m in modules.items():
        monkeypatch.setitem(sys.modules, name, m)
    rec = Recorder()
    bridge = Bridge(rec, 0, clock=lambda: 0, bridge_id=1)

    async def main():
        runner = Runner(argparse.Namespace(), bridge, transport=None)
        runner.start_ant()
        runner.ant.set_paired([(120, 0, 0)])
        deadline = time.monotonic() + 10
        while len(rec.of(protocol.KIND_DATA)) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if hasattr(runner.ant, "stop"):
            runner.ant.stop()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(rec.of(protocol.KIND_DATA)) >= 3 and rec.of(protocol.KIND_LINK), rec.frames
    assert rec.threads == {loop_thread}, "every frame sent from the event loop's thread"
