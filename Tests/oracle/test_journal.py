"""An independent decoder of the journal format (docs/journal.md), written from the document,
checked against what `bikecomputer journal inspect --json --values` reads from the same files."""
import json
import struct
import subprocess

import pytest

QUANTITIES = [
    ("heart_rate", "bpm"), ("power", "W"), ("cadence", "rpm"), ("speed", "m/s"), ("distance", "m"),
    ("rr_interval", "s"), ("pedal_balance_right", "%"), ("torque_effectiveness_left", "%"),
    ("torque_effectiveness_right", "%"), ("pedal_smoothness_left", "%"), ("pedal_smoothness_right", "%"),
    ("energy", "kJ"), ("battery", "%"), ("altitude", "m"), ("latitude", "deg"), ("longitude", "deg"),
    ("temperature", "C"),
]
SCALES = [1, 10, 100, 1000, 1024]


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


class Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def u8(self):
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self):
        v, shift = 0, 0
        while True:
            b = self.u8()
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7

    def svarint(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def u64(self):
        self.pos += 8
        return struct.unpack("<Q", self.data[self.pos - 8:self.pos])[0]


def as_double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0]


def decode_segment(data: bytes, expected_seq):
    magic, version, header_bytes, seg_id, first, size = struct.unpack("<IHHIII", data[:20])
    assert magic == 0x4C4A4B42 and version in (1, 2, 3) and header_bytes == 32 and size == len(data)
    assert struct.unpack("<I", data[28:32])[0] == crc32c(data[:28])
    assert expected_seq is None or first == expected_seq
    state = {"last": 0, "streams": {}}
    out, seq, off = [], first, 32
    while off + 7 <= len(data) and any(data[off:off + 7]):
        length, s, rtype = struct.unpack("<HIB", data[off:off + 7])
        payload = data[off + 7:off + 7 + length]
        assert struct.unpack("<I", data[off + 7 + length:off + 11 + length])[0] == crc32c(data[off:off + 7 + length])
        assert s == seq
        assert rtype != 9 or version >= 2, "an elapsed record (type 9) came with format version 2"
        assert rtype != 10 or version >= 3, "a timeline record (type 10) came with format version 3"
        out.append((rtype, decode_payload(rtype, payload, state)))
        off += 11 + length
        seq += 1
    assert not any(data[off:]), "bytes after the last record"
    return out, seq


def decode_payload(rtype, payload, state):
    r = Reader(payload)
    if rtype == 2:  # event
        kind, instant, trigger = r.u8(), r.svarint(), r.u8()
        return {"kind": ["start", "pause", "resume", "lap", "stop", "marker", "gap"][kind], "instant": instant,
                "trigger": ["manual", "auto", "distance", "time", "session_end", "remote"][trigger]}
    if rtype == 9:  # elapsed: a running ride's second with nothing to record
        instant = r.svarint()
        assert r.pos == len(payload)
        return f"elapsed at={instant}ms"
    if rtype == 10:  # timeline: the boot's id (two u64, the UUID's first and last 8 bytes) and the offset
        high, low, offset = r.u64(), r.u64(), r.svarint()
        assert r.pos == len(payload)
        h = f"{high:016x}{low:016x}"
        return f"timeline boot={h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]} offset={offset}ms"
    if rtype != 3:
        return None
    values = []
    base = state["last"] + r.svarint()
    previous = base
    for _ in range(r.varint()):
        tag = r.u8()
        q, series, same = tag & 0x1F, bool(tag & 0x20), bool(tag & 0x80)
        st = state["streams"].setdefault((q, series), {"mode": None, "k": 0, "bits": None, "t": 0, "step": 0, "seen": 0})
        if not same:
            predicted = st["t"] + st["step"] if st["seen"] >= 2 else previous
            previous = predicted + r.svarint()
        if st["seen"] >= 1:
            st["step"] = previous - st["t"]
        st["seen"] = min(2, st["seen"] + 1)
        st["t"] = previous
        h = r.varint()
        mode = h & 7
        if mode == 6:
            bits = st["bits"]
        elif mode == 5:
            bits = r.u64()
        elif mode == 7:
            lead = h >> 3
            x = 0
            for i in range(8 - lead):
                x |= r.u8() << (8 * i)
            bits = st["bits"] ^ x
        else:
            delta = (h >> 3 >> 1) ^ -((h >> 3) & 1)
            k = st["k"] + delta if st["mode"] == mode else delta
            st["mode"], st["k"] = mode, k
            bits = struct.unpack("<Q", struct.pack("<d", float(k) if SCALES[mode] == 1 else k / SCALES[mode]))[0]
        st["bits"] = bits
        name, unit = QUANTITIES[q]
        values.append(f"{'series' if series else 'sample'} {name}={as_double(bits)!r}{unit} at={previous}ms")
    state["last"] = previous
    assert r.pos == len(payload)
    return values


@pytest.fixture(scope="module")
def journal_dir(tmp_path_factory, bikecomputer):
    d = tmp_path_factory.mktemp("journal")
    bench = bikecomputer.parent / "journal-bench"
    subprocess.run([str(bench), "--write", str(d)], check=True, capture_output=True, timeout=300)
    return d


def test_independent_decoder_agrees_with_inspect(journal_dir, bikecomputer):
    segments = sorted(journal_dir.glob("seg-*.jnl"))
    assert len(segments) >= 2, "the ride should span several segments"
    records, seq = [], None
    for path in segments:
        recs, seq = decode_segment(path.read_bytes(), seq)
        records += recs
    ours_values = [v for t, p in records if t == 3 for v in p]
    ours_events = [p for t, p in records if t == 2]
    out = subprocess.run([str(bikecomputer), "journal", "inspect", str(journal_dir), "--json", "--values"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    inspected = json.loads(out)
    theirs_values = [v for r in inspected["records"] if r["type"] == "group" for v in r["values"]]
    assert len(ours_values) > 1000
    assert ours_values == theirs_values
    assert [e["kind"] for e in ours_events] == ["start", "lap"]
    # Format 3's timeline record: one after the header, as `journal inspect` reads it.
    ours_timelines = [p for t, p in records if t == 10]
    assert ours_timelines == [r["record"] for r in inspected["records"] if r["type"] == "timeline"]
    assert ours_timelines == ["timeline boot=6f1c2a3b-9d4e-4abc-8123-456789abcdef offset=0ms"], ours_timelines
    assert inspected["rebuild"]["laps"] == 2 and inspected["rebuild"]["state"] == "running"
    assert inspected["repairs"] == []


def test_a_ride_without_sensors_is_one_elapsed_record_a_second(bikecomputer, tmp_path):
    """Format 2's elapsed records (type 9): a running ride's seconds with nothing to record, so a
    crash does not take its time back. Decoded here and by `journal inspect`; recovery's timer."""
    bench = bikecomputer.parent / "journal-bench"
    subprocess.run([str(bench), "--write-quiet", str(tmp_path)], check=True, capture_output=True, timeout=120)
    records, seq = [], None
    for path in sorted(tmp_path.glob("seg-*.jnl")):
        recs, seq = decode_segment(path.read_bytes(), seq)
        records += recs
    assert not [p for t, p in records if t == 3], "no sensor: no sample"
    ours = [p for t, p in records if t == 9]
    instants = [int(p.split("=")[1].rstrip("ms")) for p in ours]
    assert len(instants) >= 29 and all(b - a == 1000 for a, b in zip(instants, instants[1:])), instants
    start = [p["instant"] for t, p in records if t == 2 and p["kind"] == "start"][0]
    assert instants[0] > start, "the start's own instant needs none"
    out = subprocess.run([str(bikecomputer), "journal", "inspect", str(tmp_path), "--json"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    inspected = json.loads(out)
    assert inspected["format_version"] == 3
    assert ours == [r["record"] for r in inspected["records"] if r["type"] == "elapsed"]
    # Recovery brings the timer back to the last elapsed second (before format 2: to the start).
    assert inspected["rebuild"]["state"] == "running"
    assert inspected["rebuild"]["timer_time_ms"] >= instants[-1] - start - 1000, inspected["rebuild"]


def test_inspect_reports_a_torn_tail_without_repairing_it(journal_dir, bikecomputer, tmp_path):
    segments = sorted(journal_dir.glob("seg-*.jnl"))
    last = segments[-1].read_bytes()
    end = max(i for i, b in enumerate(last) if b) + 1
    torn = bytearray(last)
    torn[end - 3] ^= 0xFF  # damage the last record's checksum
    for p in segments[:-1]:
        (tmp_path / p.name).write_bytes(p.read_bytes())
    (tmp_path / segments[-1].name).write_bytes(bytes(torn))
    out = subprocess.run([str(bikecomputer), "journal", "inspect", str(tmp_path), "--json"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    inspected = json.loads(out)
    assert any("checksum mismatch" in r for r in inspected["repairs"])
    assert (tmp_path / segments[-1].name).read_bytes() == bytes(torn), "inspect must not write"
