"""Replay fidelity: a replayed ride's summary.json against the recording unit's own session and
lap messages (docs/simulator.md, "Replaying recorded rides")."""
import fitdecode

# summary.json key -> FIT session field
FIELDS = [
    ("timer_time_s", "total_timer_time"),
    ("elapsed_time_s", "total_elapsed_time"),
    ("distance_m", "total_distance"),
    ("avg_speed_mps", "avg_speed"),
    ("max_speed_mps", "max_speed"),
    ("avg_hr_bpm", "avg_heart_rate"),
    ("max_hr_bpm", "max_heart_rate"),
    ("avg_cadence_rpm", "avg_cadence"),
    ("max_cadence_rpm", "max_cadence"),
    ("avg_power_w", "avg_power"),
    ("max_power_w", "max_power"),
    ("normalized_power_w", "normalized_power"),
]


def unit_messages(path_or_bytes):
    """The unit's session and lap messages, as dicts, in file order."""
    import io
    src = io.BytesIO(path_or_bytes) if isinstance(path_or_bytes, (bytes, bytearray)) else str(path_or_bytes)
    sessions, laps = [], []
    with fitdecode.FitReader(src, check_crc=fitdecode.CrcCheck.WARN) as reader:
        for frame in reader:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name in ("session", "lap"):
                d = {f.name: f.value for f in frame.fields}
                (sessions if frame.name == "session" else laps).append(d)
    return sessions, laps


def combined(sessions):
    """One figure per field for the whole file: sums of times and distance, maxima of maxima,
    timer-weighted averages (a file of several sessions is replayed as one ride)."""
    if not sessions:
        return None
    if len(sessions) == 1:
        return sessions[0]
    out = {}
    timer = sum(s.get("total_timer_time") or 0 for s in sessions)
    for k in ("total_timer_time", "total_elapsed_time", "total_distance"):
        vals = [s.get(k) for s in sessions if s.get(k) is not None]
        out[k] = sum(vals) if vals else None
    for k in ("max_speed", "max_heart_rate", "max_cadence", "max_power"):
        vals = [s.get(k) for s in sessions if s.get(k) is not None]
        out[k] = max(vals) if vals else None
    for k in ("avg_heart_rate", "avg_cadence", "avg_power", "normalized_power"):
        vals = [(s.get(k), s.get("total_timer_time") or 0) for s in sessions if s.get(k) is not None]
        out[k] = sum(v * w for v, w in vals) / sum(w for _, w in vals) if vals and sum(w for _, w in vals) else None
    out["avg_speed"] = out["total_distance"] / timer if out.get("total_distance") and timer else None
    return out


def compare(app, unit):
    """[(field, app value, unit value)] for the fields the unit wrote."""
    rows = []
    for ak, uk in FIELDS:
        u = unit.get(uk)
        if u is None or (uk in ("total_distance", "avg_speed") and u == 0 and app.get(ak) is None):
            continue
        rows.append((ak, app.get(ak), u))
    return rows
