"""The simulator's scripted ride runs and reaches the summary and back to idle."""
import subprocess


def test_scripted_ride_reaches_summary(bikesim):
    out = subprocess.run([str(bikesim)], capture_output=True, text=True, timeout=120, check=True).stdout
    lines = out.splitlines()
    assert any("COUNTDOWN 3" in l for l in lines)
    assert any("SUMMARY" in l and "saved" in l for l in lines)
    assert lines[-1].split(None, 1)[1].startswith("IDLE")
