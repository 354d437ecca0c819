"""Synthetic FIT activities written the way different makers' units write them, with the
session figures those units compute from their own one-second data.

No real recordings of other makers' units can be shipped (see docs/simulator.md): the FIT
libraries' PyPI sdists checked carry no test files. These files exercise what such recordings
contain that the three fixtures do not: developer fields, compressed timestamp headers,
big-endian definitions, enhanced_speed/enhanced_altitude without speed/altitude, records
without distance, sparse ("smart") recording, auto-pause timer events, lap triggers, several
sessions, a missing session, out-of-order and duplicate records, and a long ride.

A "unit" here rides a deterministic one-second ride (`Ride`), writes records from it in its
maker's style, and writes lap and session messages computed from the one-second data with
the common conventions (Garmin's: timer time from the timer events, distance the activity's
accumulated distance, averages over the timer's seconds, cadence without zeros, power with
zeros; maxima over the seconds). Every file is checked by the independent decoders (fitdecode
and fitparse) before use.
"""
import random
import struct

FIT_EPOCH = 631065600
START = 1_000_000_000  # FIT seconds: 2021-09-08


# ---------------------------------------------------------------- the ride a unit records

class Ride:
    """One-second data of a ride: per second (timestamp, running, hr, power, cadence, speed,
    distance, altitude), plus timer events and laps."""

    def __init__(self, seed, seconds, pauses=(), laps_every_s=None, indoor=False, power=True):
        with_power = power
        rng = random.Random(seed)
        self.seconds = []
        self.events = [(START, "start", False)]
        stopped = set()
        for a, b in pauses:
            self.events.append((START + a, "stop_all", True))
            self.events.append((START + b, "start", True))
            stopped.update(range(a, b))
        hr, p, v, alt, dist = 110.0, 180.0, 8.0, 200.0, 0.0
        for s in range(seconds + 1):
            running = s not in stopped
            hr = min(190, max(90, hr + rng.uniform(-3, 3.2)))
            p = min(600, max(0, p + rng.uniform(-25, 25)))
            coasting = running and rng.random() < 0.12
            v = min(18, max(0.5, v + rng.uniform(-0.4, 0.4))) if not indoor else min(14, max(5, v + rng.uniform(-0.3, 0.3)))
            alt += rng.uniform(-0.5, 0.5)
            watts = 0 if coasting else round(p)
            cadence = 0 if coasting else round(70 + (p - 150) / 8 + rng.uniform(-4, 4))
            # The activity's distance grows over each second the timer ran, at that second's
            # speed (counted at the end of the second).
            if running and s > 0 and self.seconds[-1]["running"]:
                dist += self.seconds[-1]["speed"]
            self.seconds.append(dict(t=START + s, running=running, hr=round(hr), power=watts if with_power else None,
                                     cadence=max(0, cadence), speed=round(v, 3), distance=round(dist, 2),
                                     altitude=round(alt, 1)))
        self.end = START + seconds
        self.events.append((self.end, "stop_all", False))
        self.laps = []
        if laps_every_s:
            edges = list(range(laps_every_s, seconds, laps_every_s))
            self.laps = [START + e for e in edges]
        self.power = with_power

    def running_seconds(self, a, b):
        """The seconds counted by the timer in [a, b): the second starting at each timestamp."""
        return [x for x in self.seconds if a <= x["t"] < b and x["running"]]

    def summary(self, a, b):
        """Averages over the timer's seconds in [a, b); extremes also over the record at b
        (the stop's or the lap's own second)."""
        secs = self.running_seconds(a, b)
        ext = secs + [x for x in self.seconds if x["t"] == b and x["running"]]
        out = {}
        out["total_timer_time"] = float(len(secs))
        out["total_elapsed_time"] = float(b - a)
        d_end = max((x["distance"] for x in self.seconds if x["t"] <= b), default=0.0)
        d_start = max((x["distance"] for x in self.seconds if x["t"] <= a), default=0.0)
        out["total_distance"] = round(d_end - d_start, 2)
        out["avg_speed"] = round(out["total_distance"] / out["total_timer_time"], 3) if out["total_timer_time"] else None
        out["max_speed"] = max(x["speed"] for x in ext)
        hrs = [x["hr"] for x in secs]
        out["avg_heart_rate"] = round(sum(hrs) / len(hrs))
        out["max_heart_rate"] = max(x["hr"] for x in ext)
        cads = [x["cadence"] for x in secs if x["cadence"] > 0]
        out["avg_cadence"] = round(sum(cads) / len(cads))
        out["max_cadence"] = max(x["cadence"] for x in ext)
        if self.power:
            ps = [x["power"] for x in secs]
            out["avg_power"] = round(sum(ps) / len(ps))
            out["max_power"] = max(x["power"] for x in ext)
        return out


# ---------------------------------------------------------------- a small FIT writer

BASE = {"enum": (0x00, "B"), "sint8": (0x01, "b"), "uint8": (0x02, "B"), "sint16": (0x83, "h"), "uint16": (0x84, "H"),
        "sint32": (0x85, "i"), "uint32": (0x86, "I"), "string": (0x07, None), "uint8z": (0x0A, "B"), "uint16z": (0x8B, "H"),
        "uint32z": (0x8C, "I"), "float32": (0x88, "f")}
INVALID = {"B": 0xFF, "b": 0x7F, "H": 0xFFFF, "h": 0x7FFF, "I": 0xFFFFFFFF, "i": 0x7FFFFFFF}


def crc16(data, crc=0):
    table = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]
    for byte in data:
        for nibble in (byte & 0xF, byte >> 4):
            t = table[crc & 0xF]
            crc = (crc >> 4) & 0x0FFF
            crc ^= t ^ table[nibble]
    return crc


class Writer:
    def __init__(self, big_endian=False):
        self.out = bytearray()
        self.defs = {}
        self.big = big_endian

    def define(self, local, global_num, fields, dev_fields=()):
        """fields: [(number, type, count)]; dev_fields: [(number, size, dev_index)]."""
        header = 0x40 | local | (0x20 if dev_fields else 0)
        self.out += bytes([header, 0, 1 if self.big else 0])
        self.out += struct.pack(">H" if self.big else "<H", global_num)
        self.out += bytes([len(fields)])
        for num, typ, count in fields:
            bt, fmt = BASE[typ]
            size = count if typ == "string" else struct.calcsize(fmt) * count
            self.out += bytes([num, size, bt])
        if dev_fields:
            self.out += bytes([len(dev_fields)])
            for num, size, idx in dev_fields:
                self.out += bytes([num, size, idx])
        self.defs[local] = (fields, dev_fields)

    def data(self, local, values, dev_bytes=b"", compressed_offset=None):
        fields, dev_fields = self.defs[local]
        if compressed_offset is None:
            self.out += bytes([local])
        else:
            self.out += bytes([0x80 | (local << 5) | (compressed_offset & 0x1F)])
        e = ">" if self.big else "<"
        for (num, typ, count), v in zip(fields, values):
            bt, fmt = BASE[typ]
            if typ == "string":
                b = (v or "").encode()[:count - 1]
                self.out += b + bytes(count - len(b))
                continue
            vs = v if isinstance(v, (list, tuple)) else [v]
            for x in vs:
                if x is None:
                    x = 0 if typ.endswith("z") else INVALID.get(fmt, 0xFF)
                self.out += struct.pack(e + fmt, int(x) if fmt != "f" else x)
        self.out += dev_bytes

    def finish(self):
        header = bytearray([14, 0x20]) + struct.pack("<H", 2132) + struct.pack("<I", len(self.out)) + b".FIT"
        header += struct.pack("<H", crc16(header))
        body = header + self.out
        return bytes(body + struct.pack("<H", crc16(body)))


# ---------------------------------------------------------------- units

def s(x, scale):
    return None if x is None else round(x * scale)


def write_unit(ride, manufacturer, *, smart=False, compressed=False, big_endian=False, enhanced_only=False,
               distance_in_records=True, developer=False, session=True, sessions_split=None, shuffle=False,
               timer_events=True, lap_trigger=0, seed=1):
    rng = random.Random(seed)
    w = Writer(big_endian)
    w.define(0, 0, [(0, "enum", 1), (1, "uint16", 1), (2, "uint16", 1), (3, "uint32z", 1), (4, "uint32", 1)])
    w.data(0, [4, manufacturer, 1, 12345, START])
    if developer:
        # developer_data_id (207) and field_description (206): a "core temperature" field.
        w.define(1, 207, [(3, "uint8", 1), (1, "uint8", 16)])
        w.data(1, [0, [7] * 16])
        w.define(2, 206, [(0, "uint8", 1), (1, "uint8", 1), (2, "uint8", 1), (3, "string", 16), (8, "string", 8)])
        w.data(2, [0, 0, 0x84, "core_temp", "C"])
    # events
    w.define(3, 21, [(253, "uint32", 1), (0, "enum", 1), (1, "enum", 1), (3, "uint32", 1)])
    # records
    rec_fields = [(253, "uint32", 1), (3, "uint8", 1), (4, "uint8", 1)]
    if ride.power:
        rec_fields.append((7, "uint16", 1))
    if enhanced_only:
        rec_fields += [(73, "uint32", 1), (78, "uint32", 1)]
    else:
        rec_fields += [(6, "uint16", 1), (2, "uint16", 1)]
    if distance_in_records:
        rec_fields.append((5, "uint32", 1))
    dev = [(0, 2, 0)] if developer else []
    if compressed:
        comp_fields = [f for f in rec_fields if f[0] != 253]
        w.define(1, 20, comp_fields, dev)  # compressed headers carry local types 0-3 only
    w.define(4, 20, rec_fields, dev)

    def record_values(x):
        vals = [x["t"], x["hr"], x["cadence"]]
        if ride.power:
            vals.append(x["power"])
        if enhanced_only:
            vals += [s(x["speed"], 1000), s(x["altitude"] + 500, 5)]
        else:
            vals += [s(x["speed"], 1000), s(x["altitude"] + 500, 5)]
        if distance_in_records:
            vals.append(s(x["distance"], 100))
        return vals

    events = sorted(ride.events) if timer_events else []
    ev_i = 0
    last_written = None
    secs = [x for x in ride.seconds if x["running"]]  # no records while the timer is stopped
    if smart:
        kept = []
        for i, x in enumerate(secs):
            if i == 0 or i == len(secs) - 1 or rng.random() < 0.35 or any(e[0] == x["t"] for e in ride.events):
                kept.append(x)
        secs = kept
    order = list(secs)
    if shuffle:
        # a few neighbours swapped and a record repeated, as some exports have
        for _ in range(8):
            i = rng.randrange(1, len(order) - 2)
            order[i], order[i + 1] = order[i + 1], order[i]
        order.insert(len(order) // 2, order[len(order) // 2])
    last_ts = None
    for x in order:
        while ev_i < len(events) and events[ev_i][0] <= x["t"] and not (events[ev_i][1] == "stop_all" and events[ev_i][0] == x["t"]):
            t, kind, auto = events[ev_i]
            w.data(3, [t, 0, 0 if kind == "start" else 4, 1 if auto else 0])
            ev_i += 1
        vals = record_values(x)
        devb = struct.pack(">H" if big_endian else "<H", 370 + (x["t"] % 7)) if developer else b""
        if compressed and last_ts is not None and 0 <= x["t"] - last_ts < 31:
            w.data(1, vals[1:], devb, compressed_offset=x["t"] & 0x1F)
        else:
            w.data(4, vals, devb)
        last_ts = x["t"]
        while ev_i < len(events) and events[ev_i][0] <= x["t"]:
            t, kind, auto = events[ev_i]
            w.data(3, [t, 0, 0 if kind == "start" else 4, 1 if auto else 0])
            ev_i += 1
    while ev_i < len(events):
        t, kind, auto = events[ev_i]
        w.data(3, [t, 0, 0 if kind == "start" else 4, 1 if auto else 0])
        ev_i += 1

    def summary_fields(global_num):
        lap = global_num == 19
        f = [(253, "uint32", 1), (2, "uint32", 1), (7, "uint32", 1), (8, "uint32", 1), (9, "uint32", 1),
             (13 if lap else 14, "uint16", 1), (14 if lap else 15, "uint16", 1), (15 if lap else 16, "uint8", 1),
             (16 if lap else 17, "uint8", 1), (17 if lap else 18, "uint8", 1), (18 if lap else 19, "uint8", 1),
             (19 if lap else 20, "uint16", 1), (20 if lap else 21, "uint16", 1)]
        if lap:
            f.append((24, "enum", 1))
        return f

    def summary_values(a, b, lap):
        m = ride.summary(a, b)
        vals = [b, a, s(m["total_elapsed_time"], 1000), s(m["total_timer_time"], 1000), s(m["total_distance"], 100),
                s(m["avg_speed"], 1000), s(m["max_speed"], 1000), m["avg_heart_rate"], m["max_heart_rate"],
                m["avg_cadence"], m["max_cadence"], m.get("avg_power"), m.get("max_power")]
        if lap:
            vals.append(lap_trigger if b != ride.end else 7)
        return vals

    w.define(6, 19, summary_fields(19))
    edges = [START] + ride.laps + [ride.end]
    for a, b in zip(edges, edges[1:]):
        w.data(6, summary_values(a, b, True))
    if session:
        w.define(7, 18, summary_fields(18))
        spans = [(START, ride.end)] if not sessions_split else [(START, START + sessions_split), (START + sessions_split, ride.end)]
        for a, b in spans:
            w.data(7, summary_values(a, b, False))
    w.define(8, 34, [(253, "uint32", 1), (0, "uint32", 1), (1, "uint16", 1)])
    w.data(8, [ride.end, s(ride.summary(START, ride.end)["total_timer_time"], 1000), 1 if not sessions_split else 2])
    return w.finish()


# Each unit: (file name, maker, what it exercises, the ride, the writer options).
UNITS = [
    ("wahoo-elemnt-style.fit", "Wahoo (32)", "enhanced_speed/altitude only, developer field, auto-pause, manual laps",
     lambda: Ride(1, 1800, pauses=[(600, 640), (1300, 1310)], laps_every_s=600),
     dict(manufacturer=32, enhanced_only=True, developer=True)),
    ("hammerhead-karoo-style.fit", "Hammerhead (289)", "compressed timestamp headers, 1 s records",
     lambda: Ride(2, 1500, pauses=[(700, 760)], laps_every_s=500), dict(manufacturer=289, compressed=True)),
    ("garmin-smart-recording-style.fit", "Garmin (1)", "smart recording (records 1-10 s apart), auto-pause",
     lambda: Ride(3, 2400, pauses=[(900, 990)], laps_every_s=800), dict(manufacturer=1, smart=True)),
    ("zwift-style.fit", "Zwift (260)", "indoor, no timer events, distance laps",
     lambda: Ride(4, 1200, laps_every_s=300, indoor=True), dict(manufacturer=260, timer_events=False, lap_trigger=2)),
    ("bryton-style.fit", "Bryton (267)", "big-endian definitions, records without distance, no power",
     lambda: Ride(5, 1200, pauses=[(400, 430)], power=False), dict(manufacturer=267, big_endian=True, distance_in_records=False)),
    ("coros-style.fit", "Coros (294)", "two sessions, out-of-order and repeated records",
     lambda: Ride(6, 1600, laps_every_s=800), dict(manufacturer=294, sessions_split=800, shuffle=True)),
    ("strava-export-style.fit", "Strava (265)", "no session message (nothing to compare; the replay must still make the ride)",
     lambda: Ride(7, 900), dict(manufacturer=265, session=False)),
    ("long-ride-style.fit", "Garmin (1)", "6 h at 1 s with auto-pauses (21 600 records)",
     lambda: Ride(8, 21600, pauses=[(3600 * k, 3600 * k + 120) for k in range(1, 6)], laps_every_s=3600),
     dict(manufacturer=1)),
]


def build(name):
    for n, maker, what, ride, opts in UNITS:
        if n == name:
            r = ride()
            return write_unit(r, **opts), r
    raise KeyError(name)
