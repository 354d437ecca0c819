"""The simulated sensors' values, per second, from the recorded rides in ../shared/fixtures/rides
(read with fitdecode, one of the oracle decoders in .venv):

- heart rate, power and cadence from sample-activity-indoor-trainer.fit (a trainer ride: it has
  power but no speed);
- speed from garmin-edge-500-activity.fit (an outdoor ride), second by second beside them.

Both are taken from a stretch where every value is present and the rider is moving.

    .venv/bin/python Tests/vm/ble/ride_values.py OUT.json [--seconds 600]
"""
import argparse
import json
import pathlib

RIDES = pathlib.Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "rides"
TRAINER = "sample-activity-indoor-trainer.fit"
OUTDOOR = "garmin-edge-500-activity.fit"


def records(name: str) -> list:
    import fitdecode
    out = []
    with fitdecode.FitReader(str(RIDES / name)) as r:
        for frame in r:
            if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record":
                out.append({f.name: f.value for f in frame.fields})
    return out


def values(seconds: int = 600, trainer_from: int = 300, outdoor_from: int = 600) -> dict:
    trainer = [r for r in records(TRAINER)[trainer_from:]
               if r.get("heart_rate") and r.get("power") is not None and r.get("cadence")]
    outdoor = [r for r in records(OUTDOOR)[outdoor_from:] if r.get("speed")]
    n = min(seconds, len(trainer), len(outdoor))
    if n < 60:
        raise SystemExit(f"only {n} usable seconds in {TRAINER} / {OUTDOOR}")
    return {"source": f"{TRAINER} (heart rate, power, cadence from record {trainer_from}) and {OUTDOOR} "
                      f"(speed from record {outdoor_from})",
            "seconds": [{"hr": int(t["heart_rate"]), "power": int(t["power"]), "cadence": int(t["cadence"]),
                         "speed": round(float(o["speed"]), 3)} for t, o in zip(trainer[:n], outdoor[:n])]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seconds", type=int, default=600)
    a = ap.parse_args()
    pathlib.Path(a.out).write_text(json.dumps(values(a.seconds)))


if __name__ == "__main__":
    main()
