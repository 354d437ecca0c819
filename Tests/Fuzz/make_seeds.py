"""Writes the fuzz targets' seed inputs into Tests/Fuzz/Corpus/<target>/seed-* (docs/testing.md,
"Fuzzing"). The seeds are made here, independently of the Swift code: frames by the Python
bridge's encoder, FIT files by a small writer of their own, gpsd lines and configs by hand.
libFuzzer grows the corpus from them (scripts/fuzz.sh); run again after changing a format.

    python3 Tests/Fuzz/make_seeds.py"""
import pathlib
import struct
import sys

root = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(root / "board" / "bridge"))
from bikebridge import protocol as p  # noqa: E402

corpus = root / "Tests" / "Fuzz" / "Corpus"


def write(target, name, data):
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data if isinstance(data, bytes) else data.encode())


# --- bridge frames (and the same as serial records)
strap, meter, csc = p.BleId("C0:FF:EE:00:00:01"), p.BleId("C0:FF:EE:00:00:02"), p.BleId("C0:FF:EE:00:00:03")
ant_hr, ant_pwr = p.AntId(12345, 120, 0), p.AntId(12346, 11, 0)
frames = {
    "hello": p.hello(1, 3, 0xC0FFEE),
    "heartbeat": p.heartbeat(2, 7),
    "hr": p.data(3, strap, 0x2A37, bytes([0x16, 130, 0x10, 0x03, 0x20, 0x03])),
    "power": p.data(4, meter, 0x2A63, bytes([0x20, 0x00, 0xC8, 0x00, 0x10, 0x00, 0x00, 0x08])),
    "csc": p.data(5, csc, 0x2A5B, bytes([0x03, 0x10, 0, 0, 0, 0x00, 0x04, 0x08, 0x00, 0x00, 0x04])),
    "battery": p.data(6, strap, 0x2A19, bytes([87])),
    "ant-hr": p.data(7, ant_hr, 120, bytes([0x04, 0x00, 0x00, 0x00, 0x00, 0x04, 0x05, 0x8C])),
    "ant-power": p.data(8, ant_pwr, 11, bytes([0x10, 0x05, 0xFF, 0x5A, 0x10, 0x27, 0xC8, 0x00])),
    "link": p.link(9, strap, 0, p.LINK_CONNECTED),
    "found": p.found(10, strap, p.SERVICE_HEART_RATE, -60, "Polar H10 1234"),
    "scan": p.scan_state(11, True, 2, 1),
    "config-state": p.config_state(12, False, 7, "Illegal character '\\x7f'"),
}
for name, f in frames.items():
    write("bridge-frame", name, f)
serial = b"\x00" + b"".join(p.serial_record(f) for f in frames.values())
write("serial-bridge", "all", bytes([40]) + serial)
write("serial-bridge", "hr", bytes([3]) + p.serial_record(frames["hr"]) * 3)
write("serial-bridge", "noise", bytes([5]) + b"\x01\x02garbage\x00" + p.serial_record(frames["power"]))

# --- gpsd reports
gpsd = {
    "version": '{"class":"VERSION","release":"3.25","rev":"3.25","proto_major":3,"proto_minor":15}',
    "tpv": '{"class":"TPV","device":"/dev/ttyS0","mode":3,"time":"2026-06-09T10:00:01.000Z","ept":0.005,'
           '"lat":52.0911,"lon":5.1204,"altHAE":12.3,"altMSL":-30.1,"epx":3.1,"epy":4.2,"epv":7.5,'
           '"track":90.5,"speed":8.25,"climb":0.1,"eps":0.3}',
    "sky": '{"class":"SKY","device":"/dev/ttyS0","hdop":0.9,"nSat":12,"uSat":9,'
           '"satellites":[{"PRN":5,"el":45,"az":120,"ss":40,"used":true},{"PRN":7,"el":10,"az":300,"ss":20,"used":false}]}',
    "tpv-nofix": '{"class":"TPV","mode":1,"time":"2026-06-09T10:00:02.000Z"}',
    "watch": '{"class":"WATCH","enable":true,"json":true}',
}
for name, line in gpsd.items():
    write("gpsd-report", name, line)


# --- FIT files (a writer of their own: header, definitions, data messages, CRCs)
def fit_crc(data, crc=0):
    table = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]
    for b in data:
        t = table[crc & 0xF]
        crc = (crc >> 4) & 0x0FFF
        crc ^= t ^ table[b & 0xF]
        t = table[crc & 0xF]
        crc = (crc >> 4) & 0x0FFF
        crc ^= t ^ table[(b >> 4) & 0xF]
    return crc


def fit_file(body):
    h = struct.pack("<BBHI4s", 14, 0x20, 2132, len(body), b".FIT")
    h += struct.pack("<H", fit_crc(h))
    data = h + body
    return data + struct.pack("<H", fit_crc(data))


def definition(local, global_, fields):
    return struct.pack("<BBBHB", 0x40 | local, 0, 0, global_, len(fields)) + b"".join(struct.pack("BBB", *f) for f in fields)


def activity(records, compressed=False):
    base = 1_000_000_000
    body = definition(0, 0, [(0, 1, 0x00), (4, 4, 0x86)])  # file_id: type, time_created
    body += struct.pack("<BBI", 0, 4, base)
    body += definition(1, 21, [(253, 4, 0x86), (0, 1, 0x00), (1, 1, 0x00)])  # event: timer start
    body += struct.pack("<BIBB", 1, base, 0, 0)
    body += definition(2, 20, [(253, 4, 0x86), (3, 1, 0x02), (6, 2, 0x84), (7, 2, 0x84), (4, 1, 0x02)])
    body += definition(3, 20, [(3, 1, 0x02), (6, 2, 0x84), (7, 2, 0x84)])  # the same, for compressed headers
    for i in range(records):
        if compressed and i % 2:
            body += struct.pack("<BBHH", 0x80 | (3 << 5) | ((base + i) & 0x1F), 120 + i % 30, 8000 + 10 * i, 200 + i)
        else:
            body += struct.pack("<BIBHHB", 2, base + i, 120 + i % 30, 8000 + 10 * i, 200 + i, 85)
    body += struct.pack("<BIBB", 1, base + records, 0, 4)  # timer stop
    body += definition(4, 19, [(253, 4, 0x86), (2, 4, 0x86), (7, 4, 0x86), (8, 4, 0x86)])  # lap
    body += struct.pack("<BIIII", 4, base + records, base, records * 1000, records * 1000)
    body += definition(5, 18, [(253, 4, 0x86), (2, 4, 0x86), (7, 4, 0x86), (8, 4, 0x86)])  # session
    body += struct.pack("<BIIII", 5, base + records, base, records * 1000, records * 1000)
    body += definition(6, 34, [(253, 4, 0x86), (0, 4, 0x86)])  # activity
    body += struct.pack("<BII", 6, base + records, records * 1000)
    return fit_file(body)


write("fit", "activity-10", activity(10))
write("fit", "activity-compressed", activity(12, compressed=True))
truncated = activity(6)
write("fit", "truncated", truncated[:len(truncated) // 2])
write("fit", "header-only", fit_file(b""))

# --- config files
write("toml", "board-config", (root / "board" / "config.toml").read_bytes())
write("toml", "paired", """# paired on the unit
[training]
auto_pause = true
auto_pause_speed_kmh = 3.5

[[sensor]]
transport = "ble"
role = "heart_rate"
ble_address = "C0:FF:EE:00:00:01"
name = "Polar \\u007F H10 \\"strap\\" \\\\ é ☃ 😀"

[[sensor]]
transport = "ant"
role = "power"
ant_device_number = 0x3039
""")
write("toml", "numbers", """[rider]
age = +40
resting_hr = 5_0
max_hr = 190
ftp = 2_50

[zones]
hr_model = "explicit"
hr_boundaries = [
  110,  # z2
  130,
  150, 170,
]
power_boundaries = [1_00, 200, 3e2, 1.5e2]

[display]
address = 0x3C
""")
write("toml", "crlf-bom", "\ufeff[bike]\r\nwheel_circumference_mm = 2_105\r\n# done\r\n")
write("toml", "errors", "[bike]\nwheel = 'a\x7fb'\n[bike]\n[[bike]]\nx = 0x_1\ny = 1_.5\n")
# --- course files (GPX, TCX, FIT course): an L-shaped 2 km route that climbs, with a turn cue
def course_points(n=40):
    pts = []
    for i in range(n):
        if i < n // 2:
            lat, lon = 45.0 + i * 0.0005, 6.0
        else:
            lat, lon = 45.0 + (n // 2) * 0.0005, 6.0 + (i - n // 2) * 0.0007
        pts.append((lat, lon, 500.0 + 4.0 * i if i < n // 2 else 580.0 - 0.5 * (i - n // 2)))
    return pts


pts = course_points()
corner = pts[len(pts) // 2]
trkpts = "".join(f'<trkpt lat="{a:.6f}" lon="{o:.6f}"><ele>{e:.1f}</ele></trkpt>\n' for a, o, e in pts)
write("gpx", "track", f"""<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="seed" xmlns="http://www.topografix.com/GPX/1/1">
<metadata><name>Seed &amp; climb</name></metadata>
<wpt lat="{corner[0]:.6f}" lon="{corner[1]:.6f}"><name>Right at the church</name><type>Right</type></wpt>
<trk><name>Seed track</name><trkseg>
{trkpts}</trkseg></trk></gpx>
""")
rtepts = "".join(f'<rtept lat="{a:.6f}" lon="{o:.6f}"><name>p{i}</name></rtept>' for i, (a, o, _) in enumerate(pts[::4]))
write("gpx", "route", f'<gpx version="1.1"><rte><name>Route</name>{rtepts}</rte></gpx>')
write("gpx", "broken", '<?xml version="1.0"?><gpx><trk><trkseg><trkpt lat="45" lon="6"><ele>1e400</ele></trkpt><trkpt lat="91" lon="6"/>'
      '<![CDATA[x]]><!-- c --><trkpt lat="45.001" lon="&#54;"/></trkseg></trk>')
tps = "".join(f"<Trackpoint><Position><LatitudeDegrees>{a:.6f}</LatitudeDegrees><LongitudeDegrees>{o:.6f}</LongitudeDegrees>"
              f"</Position><AltitudeMeters>{e:.1f}</AltitudeMeters><DistanceMeters>{i * 55.0:.1f}</DistanceMeters></Trackpoint>\n"
              for i, (a, o, e) in enumerate(pts))
write("tcx", "course", f"""<?xml version="1.0" encoding="UTF-8"?>
<TrainingCenterDatabase xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2">
<Courses><Course><Name>Seed TCX</Name><Track>
{tps}</Track>
<CoursePoint><Name>Church</Name><Position><LatitudeDegrees>{corner[0]:.6f}</LatitudeDegrees><LongitudeDegrees>{corner[1]:.6f}</LongitudeDegrees></Position><PointType>Right</PointType><Notes>turn right</Notes></CoursePoint>
</Course></Courses></TrainingCenterDatabase>
""")
write("tcx", "activity", "<TrainingCenterDatabase><Activities><Activity><Lap><Track>" + tps[:2000].rsplit("<Trackpoint>", 1)[0]
      + "</Track></Lap></Activity></Activities></TrainingCenterDatabase>")
write("tcx", "empty", "<TrainingCenterDatabase><Courses><Course><Name>x</Name><Track></Track></Course></Courses></TrainingCenterDatabase>")


def semicircles(deg):
    return int(round(deg * 2**31 / 180))


def fit_course(points, name=b"Seed FIT", cue=True):
    body = definition(0, 0, [(0, 1, 0x00)]) + struct.pack("<BB", 0, 6)  # file_id: type course
    body += definition(1, 31, [(5, 16, 0x07)]) + struct.pack("<B16s", 1, name)  # course: name
    body += definition(2, 20, [(0, 4, 0x85), (1, 4, 0x85), (2, 2, 0x84), (5, 4, 0x86)])  # record
    for i, (a, o, e) in enumerate(points):
        body += struct.pack("<BiiHI", 2, semicircles(a), semicircles(o), int((e + 500) * 5), i * 5500)
    if cue:
        body += definition(3, 32, [(2, 4, 0x85), (3, 4, 0x85), (4, 4, 0x86), (5, 1, 0x00), (6, 16, 0x07)])  # course_point
        a, o, _ = points[len(points) // 2]
        body += struct.pack("<BiiIB16s", 3, semicircles(a), semicircles(o), (len(points) // 2) * 5500, 7, b"Church")
    return fit_file(body)


write("fit-course", "course", fit_course(pts))
write("fit-course", "no-cues", fit_course(pts[:10], name=b"", cue=False))
whole = fit_course(pts)
write("fit-course", "truncated", whole[:len(whole) // 2])
print(f"seeds written under {corpus}")
