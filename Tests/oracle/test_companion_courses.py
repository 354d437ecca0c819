"""Courses from the phone (issue 28; docs/companion.md, "Courses"): a real `bikecomputer run` and
`bikecompanion serve` on one config. A paired phone uploads a GPX no one here wrote (gpxpy's test
file, fetched from PyPI at test time), which is imported as `courses import` imports it (the
points gpxpy reads, gpxpy's name) and listed; a file over the documented size limit is refused
with 413 before it is read, a malformed one with 422 naming the file and what is wrong, nothing
stored for either; choosing the course makes the running unit report it (`ctl status`, `ctl
course`), clearing it clears it; nothing of this without a token."""
import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

import gpxpy
import pytest

from pypi_sdist import SourceUnavailable, extract
from test_run import App

UPLOAD_BYTES_MAX = 8 << 20  # CompanionServer.courseUploadBytesMax, as docs/companion.md says


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rig:
    def __init__(self, bikecomputer, tmp):
        self.tmp, self.port, self.data = tmp, free_port(), tmp / "data"
        self.cfg = tmp / "config.toml"
        self.cfg.write_text(f"""[bridge]
transport = "unix"
path = "{tmp}/bridge.sock"

[control]
socket = "{tmp}/control.sock"

[storage]
data_dir = "{self.data}"

[companion]
enabled = true
listen = "127.0.0.1:{self.port}"
""")
        self.app = App(bikecomputer, tmp, self.cfg)
        self.log_path = tmp / "companion.log"
        self.log = open(self.log_path, "w+")
        self.companion = subprocess.Popen([str(bikecomputer.parent / "bikecompanion"), "serve", "--config", str(self.cfg)],
                                          stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if self.http("GET", "/api/session")[0] == 401:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("bikecompanion did not start: " + self.logtext())
        self.token = None

    def logtext(self):
        self.log.flush()
        return self.log_path.read_text()

    def http(self, method, path, body=None, raw=None, token=None):
        headers = {"content-type": "application/json" if raw is None else "application/octet-stream"}
        if token:
            headers["authorization"] = "Bearer " + token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None))
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, {"raw": text.decode(errors="replace")}
        except (ConnectionResetError, BrokenPipeError):
            return None, {}

    def pair(self):
        status, _ = self.http("POST", "/api/pair/request")
        assert status == 200
        # The unit shows the code; the companion's log says it too.
        code = re.findall(r"pairing code (\d+) for", self.logtext())[-1]
        status, j = self.http("POST", "/api/pair", {"code": code, "name": "pytest"})
        assert status == 200, j
        self.token = j["token"]
        return self.token

    def close(self):
        self.companion.terminate()
        try:
            self.companion.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.companion.kill()
        self.log.close()
        self.app.proc.terminate()
        try:
            self.app.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.app.proc.kill()


@pytest.fixture()
def rig(bikecomputer, tmp_path):
    r = Rig(bikecomputer, tmp_path)
    try:
        yield r
    finally:
        r.close()


def real_gpx():
    try:
        root = extract("gpxpy", "1.6.2", lambda name: "/test_files/" in name and name.endswith(".gpx"))
    except SourceUnavailable as e:
        pytest.fail(f"gpxpy's test files are needed: {e}")
    return next(root.rglob("korita-zbevnica.gpx"))


def raw_post(rig, token, name, length, send):
    """POST /api/courses?name=NAME over a socket: with Content-Length `length` (then `send`
    bytes), or chunked with `send` bytes; the status and JSON of the answer."""
    with socket.create_connection(("127.0.0.1", rig.port), timeout=30) as s:
        head = f"POST /api/courses?name={name} HTTP/1.1\r\nHost: 127.0.0.1:{rig.port}\r\nAuthorization: Bearer {token}\r\n"
        head += f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
        s.sendall((head + "Content-Type: application/octet-stream\r\n\r\n").encode())
        try:
            chunk = b" " * 65536
            left = send
            while left > 0:
                n = min(left, len(chunk))
                s.sendall(chunk[:n] if length is not None else f"{n:x}\r\n".encode() + chunk[:n] + b"\r\n")
                left -= n
            if length is None:
                s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before taking it all
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply) < reply.index(b"\r\n\r\n") + 4 + content_length(reply):
            part = s.recv(65536)
            if not part:
                break
            reply += part
    status = int(reply.split(b" ", 2)[1])
    body = reply.split(b"\r\n\r\n", 1)[1]
    return status, json.loads(body[: content_length(reply)] or b"{}")


def content_length(reply):
    m = re.search(rb"(?i)content-length: *(\d+)", reply)
    return int(m.group(1)) if m else 0


def stored(rig):
    d = rig.data / "courses"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_nothing_without_a_token(rig):
    gpx = real_gpx().read_bytes()
    assert rig.http("GET", "/api/courses")[0] == 401
    assert rig.http("POST", "/api/courses?name=k.gpx", raw=gpx)[0] == 401
    assert rig.http("POST", "/api/courses/select", {"key": "k"})[0] == 401
    assert rig.http("POST", "/api/courses/clear")[0] == 401
    assert stored(rig) == []
    assert rig.app.status()["course"] is None


def test_upload_list_choose_and_clear_a_course_from_the_phone(rig):
    token = rig.pair()
    path = real_gpx()
    g = gpxpy.parse(path.read_text(encoding="utf-8-sig"))
    points = [p for t in g.tracks for s in t.segments for p in s.points]
    name = next((t.name for t in g.tracks if t.name), None) or g.name or path.stem

    status, j = rig.http("POST", "/api/courses?name=Korita%20Zbevnica.gpx", raw=path.read_bytes(), token=token)
    assert status == 201, j
    assert j["key"] == "Korita-Zbevnica" and j["name"] == name.strip() and j["format"] == "gpx" and not j["replaced"], j
    assert j["points_read"] == len(points) and 2 <= j["points_kept"] <= len(points), j
    # What `bikecomputer courses show` reads from the card is what the upload said.
    shown = json.loads(subprocess.run([str(rig.app.binary), "courses", "show", "--data-dir", str(rig.data), "--json", j["key"]],
                                      check=True, capture_output=True, text=True).stdout)
    assert shown["name"] == j["name"] and abs(shown["length_m"] - j["length_m"]) <= 0.1, (shown, j)
    status, listed = rig.http("GET", "/api/courses", token=token)
    assert status == 200 and [(c["key"], c["name"]) for c in listed["courses"]] == [(j["key"], j["name"])], listed
    # The same file again replaces it (200, replaced).
    status, again = rig.http("POST", "/api/courses?name=Korita%20Zbevnica.gpx", raw=path.read_bytes(), token=token)
    assert status == 200 and again["replaced"], again

    assert rig.app.status()["course"] is None
    status, r = rig.http("POST", "/api/courses/select", {"key": j["key"]}, token=token)
    assert status == 200 and r["ok"] and r["request"] == f"course load {j['key']}", r
    assert rig.app.status()["course"] == j["name"]
    assert j["name"] in rig.app.ctl("course") or "course" in rig.app.ctl("course").lower()

    # A course that is not there: the unit's own refusal.
    status, r = rig.http("POST", "/api/courses/select", {"key": "nope"}, token=token)
    assert status == 200 and not r["ok"] and "no course named 'nope'" in r["message"], r
    assert rig.app.status()["course"] == j["name"], "a refused choice leaves the course"
    # A key that would be a second control line is not sent.
    status, r = rig.http("POST", "/api/courses/select", {"key": "a\nend"}, token=token)
    assert status == 400, r

    status, r = rig.http("POST", "/api/courses/clear", token=token)
    assert status == 200 and r["ok"], r
    assert rig.app.status()["course"] is None


def test_too_large_and_malformed_files_are_refused_and_nothing_is_stored(rig):
    token = rig.pair()
    # Said too large by its Content-Length: 413 at once, before the body is sent.
    status, j = raw_post(rig, token, "huge.gpx", UPLOAD_BYTES_MAX + 1, send=0)
    assert status == 413 and "8 MiB" in j["error"] and j["bytes_max"] == UPLOAD_BYTES_MAX, j
    # Sent chunked (no length): 413 once more than the limit has come.
    status, j = raw_post(rig, token, "huge.gpx", None, send=UPLOAD_BYTES_MAX + 1)
    assert status == 413 and "8 MiB" in j["error"], j
    # A truncated GPX: 422, naming the file and what is wrong.
    gpx = real_gpx().read_bytes()
    status, j = rig.http("POST", "/api/courses?name=cut.gpx", raw=gpx[: len(gpx) // 2], token=token)
    assert status == 422 and "cut.gpx" in j["error"] and "XML" in j["error"], j
    status, j = rig.http("POST", "/api/courses?name=photo.jpg", raw=b"\xff\xd8\xff\xe0" + bytes(200), token=token)
    assert status == 422 and "photo.jpg" in j["error"] and "not a GPX, TCX or FIT" in j["error"], j
    status, j = rig.http("POST", "/api/courses", raw=gpx, token=token)
    assert status == 400 and "name=" in j["error"], j
    assert stored(rig) == []
    # The server is still there for a good file.
    status, j = rig.http("POST", "/api/courses?name=ok.gpx", raw=gpx, token=token)
    assert status == 201, j
    assert stored(rig) == ["ok.course"]
