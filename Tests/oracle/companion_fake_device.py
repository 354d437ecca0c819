"""A fake bike computer control socket for the companion tests: speaks the line protocol
(docs/board.md) and the stream (docs/companion.md) with a tiny ride state machine, so the
companion can be tested without `bikecomputer run`. Records every line it receives."""
import json
import os
import socket
import threading
import time


class FakeDevice:
    def __init__(self, path, tick_s=0.25):
        self.path = path
        self.tick_s = tick_s
        self.stream_id = "00000000c0ffee01"
        self.seq = 0
        self.state = "idle"
        self.timer_ms = 0
        self.lap = 0
        self.received = []
        self.subscribes = []
        self.subscribers = []
        self.lock = threading.Lock()
        self.stopped = False
        if os.path.exists(path):
            os.unlink(path)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        os.chmod(path, 0o600)
        self.server.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._ticker, daemon=True).start()

    # --- stream -----------------------------------------------------------------------------
    def view(self):
        return {"state": self.state, "mode": self.state, "countdown": None, "timer_ms": self.timer_ms,
                "elapsed_ms": self.timer_ms, "lap": self.lap, "lap_timer_ms": 0,
                "metrics": self.metrics(),
                "zones": {"heart_rate": {"zone": 3, "count": 5, "name": "Z3", "target": None},
                          "power": {"zone": 2, "count": 7, "name": None, "target": None}},
                "sensors": {"heart_rate": "connected", "power": "connected", "speed": "not_configured", "cadence": "not_configured"},
                "overlay": None, "storage": "ok", "recovered": False, "summary": None}

    def emit(self, type_, fields):
        with self.lock:
            self.seq += 1
            line = json.dumps({"seq": self.seq, "type": type_, "t_ms": int(time.monotonic() * 1000), **fields})
            for s in list(self.subscribers):
                try:
                    s.sendall((line + "\n").encode())
                except OSError:
                    self.subscribers.remove(s)

    def metrics(self):
        # Intervals: 20 s hard, 20 s easy (of timer time), so a chart has something to show.
        t = self.timer_ms // 1000
        hard = (t // 20) % 2 == 1
        power = 280.0 if hard else 180.0
        return {"speed": 7.5 + (1.5 if hard else 0.0), "power": power, "heart_rate": 130.0 + t % 20 + (15 if hard else 0),
                "cadence": 88.0, "distance": 1234.0 + 8 * t}

    def _ticker(self):
        while not self.stopped:
            time.sleep(self.tick_s)
            with self.lock:
                if self.state == "running":
                    self.timer_ms += 1000
            self.emit("metrics", self.view())

    def drop_subscribers(self):
        """Ends every stream (as the device does with a client that fell behind)."""
        with self.lock:
            for s in self.subscribers:
                try:
                    s.sendall(b"error dropped fell_behind: test\n")
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.subscribers = []

    # --- requests ---------------------------------------------------------------------------
    def _accept(self):
        while not self.stopped:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        while True:
            try:
                data = conn.recv(4096)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode().strip()
                self.received.append(line)
                reply = self.answer(line, conn)
                if reply is not None:
                    try:
                        conn.sendall((reply + "\n").encode())
                    except OSError:
                        return

    def answer(self, line, conn):
        words = line.split()
        if not words:
            return "error empty line"
        w = words[0]
        if w == "subscribe":
            self.subscribes.append(words[1:])
            with self.lock:
                frm = int(words[1]) if len(words) > 1 else None
                same = len(words) < 3 or words[2] == self.stream_id
                missed = self.seq - frm if frm is not None and same and frm <= self.seq else None
                snap = {"seq": self.seq, "type": "snapshot", "t_ms": 0, "stream": self.stream_id,
                        "missed": missed, "replayed": 0, "complete": missed == 0, **self.view()}
                conn.sendall((f"ok subscribed stream={self.stream_id} latest={self.seq} "
                              f"missed={missed if missed is not None else 'unknown'} replayed=0\n").encode())
                conn.sendall((json.dumps(snap) + "\n").encode())
                self.subscribers.append(conn)
            return None
        if w == "pairing-code":
            return "ok pairing code cleared" if words[1:] == ["clear"] else "ok pairing code shown"
        if w == "start":
            if self.state != "idle":
                return self.reply(False, "ride already in progress (%s): end or discard it before starting another" % self.state)
            self.state, self.timer_ms, self.lap = "running", 0, 1
            return self.reply(True, "ride started", state_changed=True)
        if w == "pause":
            if self.state != "running":
                return self.reply(False, "the ride is not running")
            self.state = "paused"
            return self.reply(True, "ride paused", state_changed=True)
        if w == "resume":
            if self.state != "paused":
                return self.reply(False, "the ride is not paused")
            self.state = "running"
            return self.reply(True, "ride resumed", state_changed=True)
        if w == "lap":
            self.lap += 1
            self.emit("lap", {"lap": self.lap, "timer_ms": self.timer_ms})
            return self.reply(True, "lap %d" % self.lap)
        if w == "end":
            if self.state not in ("running", "paused"):
                return self.reply(False, "there is no ride to end")
            self.state = "idle"
            return self.reply(True, "ride saved", state_changed=True)
        if w == "phone-time":
            # As the unit answers (docs/power.md, "Time from the phone"): taken once, while its
            # clock is not trusted; a trusted clock is never moved by a phone.
            if getattr(self, "clock_trusted", False):
                return self.reply(False, "the unit's clock is already trusted; the phone's time is not used")
            self.clock_trusted = True
            return self.reply(True, "clock set from the phone")
        if w == "marker":
            kind, value = words[1], int(words[2])
            self.emit("marker", {"kind": kind, "value": value, "unit": "ml" if kind == "water" else None, "timer_ms": self.timer_ms})
            return self.reply(True, "marker recorded")
        return "error unknown command '%s'" % w

    def reply(self, ok, message, state_changed=False):
        if state_changed:
            self.emit("state", {"state": self.state, "mode": self.state, "countdown": None, "timer_ms": self.timer_ms, "lap": self.lap})
        self.emit("reply", {"ok": ok, "state": self.state, "message": message})
        return "%s %s: %s" % ("ok" if ok else "error", self.state, message)

    def close(self):
        self.stopped = True
        self.server.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
