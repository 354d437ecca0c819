"""One version, declared in Sources/RideModel/ProjectVersion.swift: every executable's --version,
`ctl status` and the FIT file (file_creator and the unit's device_info, read by three
independent decoders) all say it."""
import pathlib
import re
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from conftest import REPO, bin_path  # noqa: E402
from test_run import App, write_config  # noqa: E402


def declared():
    text = (REPO / "Sources" / "RideModel" / "ProjectVersion.swift").read_text()
    parts = [int(re.search(rf"static let {k} = (\d+)", text).group(1)) for k in ("major", "minor", "patch")]
    return parts


@pytest.fixture(scope="module")
def version():
    major, minor, patch = declared()
    return {"text": f"{major}.{minor}.{patch}", "fit": major * 100 + minor}


@pytest.mark.parametrize("program", ["bikecomputer", "bikesim", "bikecompanion", "journal-bench", "bikebench"])
def test_every_executable_answers_version(program, version):
    binary = bin_path() / program
    if not binary.exists():
        # The bench tools are built by `swift build` (all products); a missing one is a failure.
        pytest.fail(f"{binary} not built: run swift build")
    r = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert line.startswith(f"{program} {version['text']} ("), line
    assert "commit" in line


def test_ctl_status_reports_the_version(bikecomputer, tmp_path, version):
    cfg = write_config(tmp_path)
    app = App(bikecomputer, tmp_path, cfg)
    try:
        status = app.status()
        assert status["version"] == version["text"]
        assert "commit" in status
    finally:
        app.terminate()


@pytest.fixture(scope="module")
def fit_file(bikesim, tmp_path_factory):
    out = tmp_path_factory.mktemp("version-ride")
    subprocess.run([str(bikesim), "--headless", "--out", str(out)], check=True, capture_output=True, timeout=300)
    fits = list(out.glob("*.fit"))
    assert len(fits) == 1
    return fits[0]


def test_fit_file_creator_and_device_info_carry_the_version(fit_file, version):
    import fitdecode
    import fitparse
    from garmin_fit_sdk import Decoder, Stream

    want = version["fit"]
    # fitdecode
    creator, unit = None, None
    with fitdecode.FitReader(str(fit_file)) as r:
        for frame in r:
            if isinstance(frame, fitdecode.FitDataMessage):
                if frame.name == "file_creator":
                    creator = frame.get_value("software_version")
                if frame.name == "device_info" and frame.get_value("device_index") in ("creator", 0):
                    unit = frame.get_value("software_version")
    assert creator == want, "file_creator.software_version (no scale) = major×100 + minor"
    assert unit == pytest.approx(want / 100), "device_info.software_version (scale 100)"

    # fitparse
    f = fitparse.FitFile(str(fit_file))
    assert [m.get_value("software_version") for m in f.get_messages("file_creator")] == [want]
    units = [m.get_value("software_version") for m in f.get_messages("device_info") if m.get_value("device_index") in ("creator", 0)]
    assert units == [pytest.approx(want / 100)]

    # Garmin's own SDK
    messages, errors = Decoder(Stream.from_file(str(fit_file))).read()
    assert not errors, errors
    assert [m["software_version"] for m in messages["file_creator_mesgs"]] == [want]
    sdk_units = [m.get("software_version") for m in messages["device_info_mesgs"] if m.get("device_index") in ("creator", 0)]
    assert sdk_units == [pytest.approx(want / 100)]
