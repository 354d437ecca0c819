"""NMEA 0183 logs for gpsd/gpsfake made from recorded rides' own positions.

A recorded FIT activity (read with fitdecode, independently of the app) becomes the sentences
a UART GPS receiver sends once a second: GGA (fix, altitude, satellites, HDOP), GSA (fix type,
satellites used, DOPs), RMC (position, speed over ground, track, date) and GSV (satellites in
view) every epoch. Records without a position become "no fix" epochs (GGA quality 0, RMC status
V), as a receiver that lost the sky reports them. Checksums are NMEA's XOR of the body.

    python3 Tests/oracle/gps_nmea.py RIDE.fit OUT.log [--limit N] [--lose FROM:TO]
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
import pathlib
import sys

SEMICIRCLE_DEG = 180.0 / 2**31
KNOTS_PER_MPS = 3600.0 / 1852.0
# The satellites the log claims: PRN, elevation, azimuth, SNR. Eight in view, seven used.
SATELLITES = [(2, 34, 241, 43), (4, 15, 199, 36), (8, 66, 189, 44), (10, 51, 304, 29),
              (23, 6, 84, 0), (27, 71, 76, 43), (28, 8, 160, 31), (29, 13, 273, 33)]
USED = [2, 4, 8, 10, 27, 28, 29]
HDOP, VDOP, PDOP = 0.9, 1.3, 1.6


@dataclasses.dataclass
class Epoch:
    time: dt.datetime
    lat: float | None
    lon: float | None
    alt: float | None
    speed_mps: float | None
    track_deg: float | None = None

    @property
    def has_fix(self) -> bool:
        return self.lat is not None and self.lon is not None


def checksum(body: str) -> str:
    c = 0
    for ch in body.encode("ascii"):
        c ^= ch
    return f"{c:02X}"


def sentence(body: str) -> str:
    return f"${body}*{checksum(body)}\r\n"


def angle(deg: float, width: int, pos: str, neg: str) -> tuple[str, str]:
    """ddmm.mmmmmm (width 2 for latitude, 3 for longitude) and the hemisphere."""
    hemi = pos if deg >= 0 else neg
    deg = abs(deg)
    whole = int(deg)
    minutes = (deg - whole) * 60
    text = f"{whole:0{width}d}{minutes:09.6f}"
    if text[width:width + 2] == "60":  # 59.9999996 rounded up
        text = f"{whole + 1:0{width}d}{0:09.6f}"
    return text, hemi


def epoch_sentences(e: Epoch, gsv: bool = True) -> list[str]:
    hhmmss = e.time.strftime("%H%M%S") + f".{e.time.microsecond // 10000:02d}"
    ddmmyy = e.time.strftime("%d%m%y")
    out = []
    if e.has_fix:
        lat, ns = angle(e.lat, 2, "N", "S")
        lon, ew = angle(e.lon, 3, "E", "W")
        alt = f"{e.alt:.1f}" if e.alt is not None else ""
        out.append(sentence(f"GPGGA,{hhmmss},{lat},{ns},{lon},{ew},1,{len(USED):02d},{HDOP:.1f},{alt},M,46.9,M,,"))
        used = ",".join(f"{p:02d}" for p in USED) + "," * (12 - len(USED))
        fix_type = 3 if e.alt is not None else 2
        out.append(sentence(f"GPGSA,A,{fix_type},{used},{PDOP:.1f},{HDOP:.1f},{VDOP:.1f}"))
        knots = f"{(e.speed_mps or 0.0) * KNOTS_PER_MPS:.3f}"
        track = f"{e.track_deg:.1f}" if e.track_deg is not None else ""
        out.append(sentence(f"GPRMC,{hhmmss},A,{lat},{ns},{lon},{ew},{knots},{track},{ddmmyy},,,A"))
    else:
        out.append(sentence(f"GPGGA,{hhmmss},,,,,0,00,99.9,,M,,M,,"))
        out.append(sentence("GPGSA,A,1,,,,,,,,,,,,,99.9,99.9,99.9"))
        out.append(sentence(f"GPRMC,{hhmmss},V,,,,,,,{ddmmyy},,,N"))
    if gsv:
        n = len(SATELLITES)
        pages = (n + 3) // 4
        for page in range(pages):
            sats = SATELLITES[page * 4:page * 4 + 4]
            body = f"GPGSV,{pages},{page + 1},{n:02d}"
            for prn, el, az, snr in sats:
                body += f",{prn:02d},{el:02d},{az:03d},{snr:02d}" if (e.has_fix or snr == 0) else f",{prn:02d},{el:02d},{az:03d},"
            out.append(sentence(body))
    return out


def bearing(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dl = math.radians(lon2 - lon1)
    y = math.sin(dl) * math.cos(p2)
    x = math.cos(p1) * math.sin(p2) - math.sin(p1) * math.cos(p2) * math.cos(dl)
    return (math.degrees(math.atan2(y, x)) + 360) % 360


def epochs_from_fit(path: str | pathlib.Path, limit: int | None = None) -> list[Epoch]:
    """One epoch per record of the FIT file, in time order (fitdecode: not the app's reader)."""
    import fitdecode

    out: list[Epoch] = []
    with fitdecode.FitReader(str(path)) as fr:
        for frame in fr:
            if not isinstance(frame, fitdecode.FitDataMessage) or frame.name != "record":
                continue
            v = {f.name: f.value for f in frame.fields}
            lat, lon = v.get("position_lat"), v.get("position_long")
            alt = v.get("enhanced_altitude", v.get("altitude"))
            speed = v.get("enhanced_speed", v.get("speed"))
            out.append(Epoch(time=v["timestamp"], lat=lat * SEMICIRCLE_DEG if lat is not None else None,
                             lon=lon * SEMICIRCLE_DEG if lon is not None else None,
                             alt=alt, speed_mps=speed))
            if limit and len(out) >= limit:
                break
    out.sort(key=lambda e: e.time)
    # One epoch per second: a unit that wrote two records in one second keeps the later.
    unique: list[Epoch] = []
    for e in out:
        if unique and unique[-1].time == e.time:
            unique[-1] = e
        else:
            unique.append(e)
    for a, b in zip(unique, unique[1:]):
        if a.has_fix and b.has_fix:
            b.track_deg = bearing(a.lat, a.lon, b.lat, b.lon)
    return unique


# gpsd takes an NMEA date before its own release for a GPS week rollover (and adds 1024 weeks):
# rides recorded before 2022 are moved forward by whole weeks (same weekday and time of day).
DATE_FLOOR = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def date_shift(epochs: list[Epoch]) -> dt.timedelta:
    """Whole weeks that move the first epoch to DATE_FLOOR or later (0 when it already is)."""
    if not epochs or epochs[0].time >= DATE_FLOOR:
        return dt.timedelta(0)
    return dt.timedelta(weeks=math.ceil((DATE_FLOOR - epochs[0].time) / dt.timedelta(weeks=1)))


def write_log(epochs: list[Epoch], path: str | pathlib.Path, name: str, lose: range | None = None) -> dt.timedelta:
    """A gpsfake log: a comment header, then each epoch's sentences. Epochs in `lose` report no
    fix. Returns the date shift applied (see DATE_FLOOR)."""
    shift = date_shift(epochs)
    lines = [f"# Name: {name}\n", "# Chipset: NMEA 0183 (generated by Tests/oracle/gps_nmea.py)\n",
             f"# Epochs: {len(epochs)}; dates moved forward by {shift.days} days\n"]
    for i, e in enumerate(epochs):
        e = dataclasses.replace(e, time=e.time + shift)
        if lose is not None and i in lose:
            e = dataclasses.replace(e, lat=None, lon=None)
        lines.extend(epoch_sentences(e))
    pathlib.Path(path).write_text("".join(lines), encoding="ascii", newline="")
    return shift


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    limit, lose = None, None
    args = argv[3:]
    while args:
        if args[0] == "--limit":
            limit = int(args[1]); args = args[2:]
        elif args[0] == "--lose":
            a, b = args[1].split(":"); lose = range(int(a), int(b)); args = args[2:]
        else:
            print(f"unknown option {args[0]}", file=sys.stderr)
            return 2
    epochs = epochs_from_fit(argv[1], limit)
    write_log(epochs, argv[2], pathlib.Path(argv[1]).name, lose)
    print(f"{len(epochs)} epochs -> {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
