"""The companion (bikecompanion) over real HTTP and WebSocket connections, against a fake
control socket that speaks the device's protocol (companion_fake_device.py): pairing required,
pairing, the stream, commands with the device's replies and refusals, revocation, reconnect."""
import hashlib
import json
import os
import pathlib
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from companion_fake_device import FakeDevice  # noqa: E402

websockets_sync = pytest.importorskip("websockets.sync.client")
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402


@pytest.fixture(scope="session")
def bikecompanion(bikecomputer):
    p = bikecomputer.parent / "bikecompanion"
    assert p.exists(), f"{p} not built: run swift build first"
    return p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(d, port, enabled=True):
    cfg = d / "config.toml"
    cfg.write_text(f"""[control]
socket = "{d}/control.sock"

[storage]
data_dir = "{d}/data"

[companion]
enabled = {"true" if enabled else "false"}
listen = "127.0.0.1:{port}"
""")
    return cfg


class Companion:
    def __init__(self, binary, tmp):
        self.dir = tmp
        self.port = free_port()
        self.cfg = write_config(tmp, self.port)
        self.device = FakeDevice(str(tmp / "control.sock"), tick_s=0.25)
        self.log = open(tmp / "companion.log", "w+")
        self.binary = binary
        self.proc = subprocess.Popen([str(binary), "--config", str(self.cfg)], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if self.http("GET", "/api/session")[0] in (200, 401):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("bikecompanion did not start: " + self.logtext())
        # Wait for the stream to be followed.
        deadline = time.time() + 10
        while time.time() < deadline and not self.device.subscribes:
            time.sleep(0.05)

    def logtext(self):
        self.log.flush()
        return (self.dir / "companion.log").read_text()

    def http(self, method, path, body=None, token=None, cookie=None):
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = "Bearer " + token
        if cookie:
            headers["cookie"] = cookie
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), dict(e.headers)

    def pair(self):
        status, _, _ = self.http("POST", "/api/pair/request")
        assert status == 200
        code = [l for l in self.device.received if l.startswith("pairing-code ") and l != "pairing-code clear"][-1].split()[1]
        status, body, headers = self.http("POST", "/api/pair", {"code": code, "name": "pytest"})
        assert status == 200, body
        j = json.loads(body)
        return j["token"], j["token_id"], headers

    def ws(self, token=None, cookie=None):
        headers = {}
        if token:
            headers["Authorization"] = "Bearer " + token
        if cookie:
            headers["Cookie"] = cookie
        return websockets_sync.connect(f"ws://127.0.0.1:{self.port}/ws", additional_headers=headers, open_timeout=10)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.device.close()
        self.log.close()


@pytest.fixture()
def companion(bikecompanion):
    with tempfile.TemporaryDirectory(prefix="companion-") as d:
        c = Companion(bikecompanion, pathlib.Path(d))
        try:
            yield c
        finally:
            c.close()


def recv_json(ws, timeout=5.0):
    return json.loads(ws.recv(timeout=timeout))


def recv_until(ws, pred, timeout=5.0):
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        m = recv_json(ws, timeout=max(0.05, deadline - time.time()))
        seen.append(m)
        if pred(m):
            return m, seen
    raise AssertionError(f"no matching message in {seen}")


def test_off_unless_enabled(bikecompanion, tmp_path):
    cfg = write_config(tmp_path, free_port(), enabled=False)
    r = subprocess.run([str(bikecompanion), "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 3
    assert "enabled = true" in r.stderr


def test_nothing_without_pairing(companion):
    assert companion.http("GET", "/api/state")[0] == 401
    assert companion.http("GET", "/api/session")[0] == 401
    status, body, _ = companion.http("POST", "/api/command", {"type": "command", "command": "start"})
    assert status == 401 and "pairing required" in body
    assert companion.http("GET", "/api/state", token="deadbeef." + "0" * 64)[0] == 401
    with pytest.raises(InvalidStatus) as e:
        companion.ws(token="nonsense")
    # Hummingbird's upgrade handler answers a refused upgrade with 400 (no upgrade happens).
    assert e.value.response.status_code in (400, 401)
    # The page itself loads (it shows the pairing form).
    status, body, _ = companion.http("GET", "/")
    assert status == 200 and "Pair with the bike computer" in body
    # No command reached the device.
    assert not [l for l in companion.device.received if l.split()[0] in ("start", "pause", "end")]


def test_pairing_code_rules(companion):
    status, body, _ = companion.http("POST", "/api/pair", {"code": "123456"})
    assert status == 409, body  # no code requested yet
    assert companion.http("POST", "/api/pair/request")[0] == 200
    code = companion.device.received[-1].split()[1]
    assert len(code) == 6 and code.isdigit()
    assert f"pairing code {code}" in companion.logtext()
    # One code per 10 s: asking again at once is refused (and shows nothing new on the unit).
    status, body, headers = companion.http("POST", "/api/pair/request")
    assert status == 429 and json.loads(body)["retry_after_s"] >= 1
    assert [l for l in companion.device.received if l.startswith("pairing-code ") and l != "pairing-code clear"] == [f"pairing-code {code}"]
    wrong = "000000" if code != "000000" else "111111"

    def enter(c):
        # Each wrong entry makes this client wait longer for the next (issue 27): 429 until then.
        for _ in range(10):
            status, body, _ = companion.http("POST", "/api/pair", {"code": c})
            if status != 429:
                return status, body
            time.sleep(json.loads(body)["retry_after_s"])
        raise AssertionError("still told to wait")

    for left in (4, 3, 2, 1):
        status, body = enter(wrong)
        assert status == 403 and json.loads(body)["attempts_left"] == left
    status, body = enter(wrong)
    assert status == 403 and json.loads(body)["attempts_left"] == 0
    # The code is cancelled (and cleared from the unit): even the right one no longer works.
    assert "pairing-code clear" in companion.device.received
    assert enter(code)[0] == 409
    # ... and a new code cannot be had at once after a cancelled one either.
    assert companion.http("POST", "/api/pair/request")[0] == 429


def test_pair_stream_and_commands(companion):
    token, token_id, headers = companion.pair()
    assert "pairing-code clear" in companion.device.received
    assert "bkc_token=" + token in headers.get("Set-Cookie", "")
    # Stored hashed, owner-only.
    f = companion.dir / "data" / "companion" / "companion-tokens"
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    text = f.read_text()
    assert token not in text and hashlib.sha256(token.encode()).hexdigest() in text and token_id in text

    status, body, _ = companion.http("GET", "/api/session", cookie="bkc_token=" + token)
    assert status == 200 and json.loads(body)["token_id"] == token_id
    # Another site's page cannot use the cookie (nor the token).
    req = urllib.request.Request(f"http://127.0.0.1:{companion.port}/api/session",
                                 headers={"cookie": "bkc_token=" + token, "origin": "http://evil.example"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 401
    with pytest.raises(InvalidStatus):
        websockets_sync.connect(f"ws://127.0.0.1:{companion.port}/ws", origin="http://evil.example",
                                additional_headers={"Cookie": "bkc_token=" + token}, open_timeout=10)
    same = websockets_sync.connect(f"ws://127.0.0.1:{companion.port}/ws", origin=f"http://127.0.0.1:{companion.port}",
                                   additional_headers={"Cookie": "bkc_token=" + token}, open_timeout=10)
    assert recv_json(same)["type"] == "snapshot"
    same.close()

    with companion.ws(token=token) as ws:
        snap = recv_json(ws)
        assert snap["type"] == "snapshot" and snap["device_connected"] is True and snap["state"] == "idle"
        m1, _ = recv_until(ws, lambda m: m["type"] == "metrics")
        m2, _ = recv_until(ws, lambda m: m["type"] == "metrics")
        assert m2["seq"] > m1["seq"]

        ws.send(json.dumps({"type": "command", "id": "a", "command": "start"}))
        res, seen = recv_until(ws, lambda m: m["type"] == "command_result")
        assert res["id"] == "a" and res["ok"] is True and res["state"] == "running", res
        # The state change arrives from the device's stream, not from the companion's guess.
        recv_until(ws, lambda m: m["type"] == "state" and m["state"] == "running", timeout=3) if not any(
            m["type"] == "state" and m["state"] == "running" for m in seen) else None

        ws.send(json.dumps({"type": "command", "id": "b", "command": "start"}))
        res, _ = recv_until(ws, lambda m: m["type"] == "command_result")
        assert res["ok"] is False and "ride already in progress" in res["message"], res
        assert res["reply"].startswith("error running: ride already in progress")

        # The timer advances in the device's metrics.
        t0, _ = recv_until(ws, lambda m: m["type"] == "metrics" and m["state"] == "running")
        t1, _ = recv_until(ws, lambda m: m["type"] == "metrics" and m["timer_ms"] > t0["timer_ms"])

        ws.send(json.dumps({"type": "marker", "id": "c", "kind": "water", "value": 250}))
        res, seen = recv_until(ws, lambda m: m["type"] == "command_result")
        assert res["ok"] is True and res["request"] == "marker water 250"
        assert "marker water 250" in companion.device.received

        ws.send(json.dumps({"type": "command", "id": "d", "command": "format-disk"}))
        res, _ = recv_until(ws, lambda m: m["type"] == "command_result")
        assert res["ok"] is False and "unknown command" in res["message"]
        assert not [l for l in companion.device.received if "format" in l]

        ws.send(json.dumps({"type": "command", "id": "e", "command": "pause"}))
        res, _ = recv_until(ws, lambda m: m["type"] == "command_result")
        assert res["ok"] and res["state"] == "paused"
        recv_until(ws, lambda m: m["type"] == "metrics" and m["state"] == "paused")

    # The same over plain HTTP.
    status, body, _ = companion.http("POST", "/api/command", {"type": "command", "command": "resume"}, token=token)
    assert status == 200 and json.loads(body)["state"] == "running"


def test_reconnect_restores_view_and_passes_last_seq(companion):
    token, _, _ = companion.pair()
    with companion.ws(token=token) as ws:
        recv_json(ws)
        last, _ = recv_until(ws, lambda m: m["type"] == "metrics")
        companion.device.drop_subscribers()
        snap, _ = recv_until(ws, lambda m: m["type"] == "snapshot", timeout=8)
        assert snap["device_connected"] is True
    again = companion.device.subscribes[-1]
    assert len(again) == 2 and int(again[0]) >= last["seq"] and again[1] == companion.device.stream_id
    # A new page gets the view at once.
    with companion.ws(token=token) as ws:
        snap = recv_json(ws, timeout=2)
        assert snap["type"] == "snapshot" and snap["state"] == "idle" and "metrics" in snap


def test_phone_clock_reaches_the_unit_only_from_a_paired_phone(companion):
    """POST /api/clock (docs/power.md, "Time from the phone"): the phone's time goes to the unit
    as `phone-time MS`, the unit's reply comes back; no token, no clock; a body that is no phone
    time is refused with what to send, and nothing reaches the unit."""
    now_ms = int(time.time() * 1000)
    status, body, _ = companion.http("POST", "/api/clock", {"unix_ms": now_ms})
    assert status == 401, body
    token, _, _ = companion.pair()
    for bad in [{}, {"unix_ms": "soon"}, {"unix_ms": 5}, {"unix_ms": 10**15}]:
        status, body, _ = companion.http("POST", "/api/clock", bad, token=token)
        assert status == 400 and "unix_ms" in json.loads(body)["error"], (bad, body)
    assert not [l for l in companion.device.received if l.startswith("phone-time")]
    status, body, _ = companion.http("POST", "/api/clock", {"unix_ms": now_ms}, token=token)
    j = json.loads(body)
    assert status == 200 and j["ok"] is True and j["message"] == "clock set from the phone", body
    assert j["request"] == f"phone-time {now_ms}" and f"phone-time {now_ms}" in companion.device.received
    # The unit's refusal (its clock is trusted now) is passed on as it is.
    status, body, _ = companion.http("POST", "/api/clock", {"unix_ms": now_ms + 1000}, token=token)
    j = json.loads(body)
    assert status == 200 and j["ok"] is False and "already trusted" in j["message"], body


def test_revoked_token_refused(companion):
    token, token_id, _ = companion.pair()
    token2, token_id2, _ = companion.pair()
    ws = companion.ws(token=token)
    recv_json(ws)
    r = subprocess.run([str(companion.binary), "revoke", token_id, "--config", str(companion.cfg)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    # The open connection is closed with the reason, new ones are refused.
    with pytest.raises(ConnectionClosed) as e:
        for _ in range(100):
            ws.recv(timeout=5)
    assert "revoked" in (e.value.rcvd.reason if e.value.rcvd else "")
    with pytest.raises(InvalidStatus):
        companion.ws(token=token)
    assert companion.http("GET", "/api/state", token=token)[0] == 401
    # The other companion is unaffected until --all.
    assert companion.http("GET", "/api/state", token=token2)[0] == 200
    r = subprocess.run([str(companion.binary), "tokens", "--config", str(companion.cfg)], capture_output=True, text=True, timeout=30)
    assert token_id2 in r.stdout and token_id not in r.stdout and token2 not in r.stdout
    r = subprocess.run([str(companion.binary), "revoke", "--all", "--config", str(companion.cfg)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert companion.http("GET", "/api/state", token=token2)[0] == 401
    r = subprocess.run([str(companion.binary), "revoke", "abcdef12", "--config", str(companion.cfg)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "tokens" in r.stderr


def test_bikecomputer_companion_runs_bikecompanion(bikecomputer, tmp_path):
    r = subprocess.run([str(bikecomputer), "companion", "tokens", "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "no paired companions" in r.stdout and str(tmp_path) in r.stdout
    r = subprocess.run([str(bikecomputer), "companion", "revoke"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 64 and "--all" in r.stderr


def test_stuck_websocket_client_is_closed_and_others_keep_up(bikecompanion, tmp_path):
    """A phone that stops reading is closed with the reason once its queue (256 messages) is
    full; another phone keeps receiving the stream."""
    c = Companion(bikecompanion, tmp_path)
    try:
        token, _, _ = c.pair()
        # A stuck client: a tiny receive buffer, and it never reads.
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        raw.connect(("127.0.0.1", c.port))
        stuck = websockets_sync.connect(f"ws://127.0.0.1:{c.port}/ws", sock=raw,
                                        additional_headers={"Authorization": "Bearer " + token}, open_timeout=10)
        live = c.ws(token=token)
        recv_json(live)
        # Flood: the device streams much faster than 1 Hz for a while.
        c.device.tick_s = 0.0005
        deadline = time.time() + 40
        first_seq = None
        last_seq = None
        while time.time() < deadline and "fell behind" not in c.logtext() + str(getattr(stuck, "close_reason", "")):
            m = recv_json(live, timeout=5)
            if m.get("type") == "metrics":
                first_seq = first_seq or m["seq"]
                last_seq = m["seq"]
            if last_seq and first_seq and last_seq - first_seq > 20000:
                break
        c.device.tick_s = 0.25
        assert last_seq and last_seq - first_seq > 300, "the live client fell behind too"
        # The stuck client, once it reads, finds its connection closed with the reason.
        reason = None
        try:
            for _ in range(100000):
                stuck.recv(timeout=10)
        except ConnectionClosed as e:
            reason = e.rcvd.reason if e.rcvd else None
        assert reason and "fell behind" in reason, reason
        # The live one is still live.
        m, _ = recv_until(live, lambda m: m["type"] == "metrics", timeout=5)
        live.close()
    finally:
        c.close()
