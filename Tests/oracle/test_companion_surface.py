"""The companion's unauthenticated surface (issue 27; docs/companion.md, "What anyone on the
network can do"): every route fuzzed from its OpenAPI description (docs/companion-openapi.yaml)
with schemathesis, without a token and with one, never answering 5xx or off its description,
and never getting a command to the device without a token; the pairing routes check the Origin,
bind a code to the client that asked for it and back off per client; a code the rider clears
on the unit is cancelled. BIKE_COMPANION_EXAMPLES sets the examples per route (default 40)."""
import http.client
import json
import os
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_companion import Companion, bikecompanion  # noqa: E402,F401  (the fixture)

try:  # a test that cannot run fails and says why, never a silent skip
    import schemathesis
except ImportError as missing:
    raise ImportError("schemathesis is missing: .venv/bin/pip install -r Tests/oracle/requirements.txt "
                      "(bash scripts/test.sh installs it)") from missing
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
SPEC = REPO / "docs" / "companion-openapi.yaml"
EXAMPLES = int(os.environ.get("BIKE_COMPANION_EXAMPLES", "40"))
COMMAND_WORDS = ("start", "pause", "resume", "lap", "end", "dismiss", "marker", "phone-time", "course")


@pytest.fixture()
def companion(bikecompanion, tmp_path):  # noqa: F811
    c = Companion(bikecompanion, tmp_path)
    try:
        yield c
    finally:
        c.close()


def operations():
    schema = schemathesis.openapi.from_path(str(SPEC))
    ops = [r.ok() for r in schema.get_all_operations()]
    # The WebSocket route is an upgrade, not a request schemathesis can make.
    return [op for op in ops if op.path != "/ws"]


def fuzz(companion, headers, examples):
    ops = operations()
    assert {op.path for op in ops} >= {"/", "/api/pair/request", "/api/pair", "/api/session", "/api/state", "/api/command"}
    base = f"http://127.0.0.1:{companion.port}"
    seen = {}

    strategy = st.one_of([op.as_strategy(mode) for op in ops
                          for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)])

    @settings(max_examples=examples * len(ops), deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def one(case):
        response = case.call(base_url=base, headers=headers, timeout=15)
        seen.setdefault(case.operation.path, set()).add(response.status_code)
        assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"
        # Off its description: an undocumented status, content type or body. A body over the
        # documented 4 KiB is refused with 413 before it is read, which schemathesis's
        # negative-data check does not count as a refusal; the status is still checked as documented.
        excluded = [negative_data_rejection] if response.status_code == 413 else []
        # An uploaded course's bytes are only a string to the schema: a file the importer refuses
        # (422, naming what is wrong) is schema-valid but no course.
        if response.status_code == 422 and case.operation.path == "/api/courses":
            excluded.append(positive_data_acceptance)
        case.validate_response(response, headers=headers, excluded_checks=excluded)

    one()
    return seen


def test_the_unauthenticated_surface_answers_as_described_and_reaches_nothing(companion):
    seen = fuzz(companion, {}, EXAMPLES)
    for path in ("/api/session", "/api/state", "/api/history", "/api/command", "/api/clock", "/api/courses",
                 "/api/courses/select", "/api/courses/clear"):
        assert seen.get(path, {401}) <= {401, 413, 400}, (path, seen)
    # Without a token nothing but pairing codes reached the device.
    reached = [l for l in companion.device.received if l.split() and l.split()[0] in COMMAND_WORDS]
    assert not reached, reached
    assert "error" not in companion.logtext().lower() or "fatal" not in companion.logtext().lower()


def test_the_paired_surface_answers_as_described(companion):
    token, _, _ = companion.pair()
    seen = fuzz(companion, {"Authorization": "Bearer " + token}, max(10, EXAMPLES // 2))
    assert 200 in seen.get("/api/state", set()) and 200 in seen.get("/api/session", set()), seen


def post(port, path, body=None, origin=None, source="127.0.0.1"):
    """A POST from `source` (another loopback address: another client)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    headers = {"content-type": "application/json"}
    if origin:
        headers["origin"] = origin
    c.request("POST", path, body=json.dumps(body).encode() if body is not None else b"", headers=headers)
    r = c.getresponse()
    out = (r.status, json.loads(r.read() or b"{}"))
    c.close()
    return out


def codes_shown(companion):
    return [l.split()[1] for l in companion.device.received if l.startswith("pairing-code ") and l != "pairing-code clear"]


def test_pairing_routes_refuse_another_sites_page(companion):
    for path, body in (("/api/pair/request", None), ("/api/pair", {"code": "123456"})):
        status, j = post(companion.port, path, body, origin="http://evil.example")
        assert status == 403 and "another site" in j["error"], (path, status, j)
    assert codes_shown(companion) == [], "a cross-site page put a code on the unit"
    # The page's own origin may.
    status, _ = post(companion.port, "/api/pair/request", origin=f"http://127.0.0.1:{companion.port}")
    assert status == 200 and len(codes_shown(companion)) == 1


def test_a_code_belongs_to_the_client_that_asked_and_others_cannot_burn_it(companion):
    port = companion.port
    assert post(port, "/api/pair/request")[0] == 200
    code = codes_shown(companion)[-1]
    wrong = "000000" if code != "000000" else "111111"
    # Another client (another address) can neither replace the code nor spend its attempts.
    status, j = post(port, "/api/pair/request", source="127.0.0.2")
    assert status == 429 and "another device" in j["error"] and j["retry_after_s"] >= 1, j
    assert codes_shown(companion) == [code]
    for _ in range(10):
        status, j = post(port, "/api/pair", {"code": wrong}, source="127.0.0.2")
        assert status == 403 and "another device" in j["error"], j
    status, j = post(port, "/api/pair", {"code": code}, source="127.0.0.2")
    assert status == 403, "the right code from another client does not pair it"
    # The genuine client still has all five attempts.
    status, j = post(port, "/api/pair", {"code": wrong})
    assert status == 403 and j["attempts_left"] == 4, j
    # ... and is made to wait before its next entry (a client hammering codes backs off).
    status, j = post(port, "/api/pair", {"code": code})
    assert status == 429 and j["retry_after_s"] >= 1, j
    time.sleep(j["retry_after_s"])
    status, j = post(port, "/api/pair", {"code": code, "name": "phone"})
    assert status == 200 and j["token"], j


def test_each_code_a_client_leaves_unused_makes_it_wait_longer(companion):
    port = companion.port
    waits = []
    for _ in range(2):
        status, j = post(port, "/api/pair/request")
        while status == 429:
            waits.append(j["retry_after_s"])
            time.sleep(j["retry_after_s"])
            status, j = post(port, "/api/pair/request")
        assert status == 200
    status, j = post(port, "/api/pair/request")
    assert status == 429 and j["retry_after_s"] > max(waits), (j, waits)


def test_a_code_the_rider_clears_on_the_unit_is_cancelled(companion):
    port = companion.port
    assert post(port, "/api/pair/request")[0] == 200
    code = codes_shown(companion)[-1]
    # The unit's stream says a button cleared it (AppEffect.pairingCodeDismissed).
    companion.device.emit("pairing", {"shown": False, "by": "button"})
    deadline = time.time() + 5
    while "cleared the pairing code" not in companion.logtext() and time.time() < deadline:
        time.sleep(0.05)
    status, j = post(port, "/api/pair", {"code": code})
    assert status == 409, "the cleared code no longer pairs"
    status, j = post(port, "/api/pair/request")
    assert status == 429 and j["retry_after_s"] >= 60, f"the rider said no: its device waits minutes, not seconds: {j}"


def test_the_token_file_is_replaced_through_a_temporary_of_its_own(companion):
    """Issue 27: the token file was written through the fixed name `companion-tokens.tmp` (shared
    by the running companion and `bikecompanion revoke`, and followed if it was a link) and renamed
    without an fsync of its directory. A link planted at that name is now left alone, the file is
    replaced atomically and durably (BoardIO's AtomicFiles: a temporary named by the process,
    fsync, rename, fsync of the directory), and stays a private regular file."""
    # The companion keeps its tokens in <data dir>/companion/ (issue 27: it sees nothing else).
    data = companion.dir / "data" / "companion"
    data.mkdir(parents=True, exist_ok=True)
    victim = companion.dir / "victim.txt"
    victim.write_text("not a token file\n")
    (data / "companion-tokens.tmp").symlink_to(victim)
    token, token_id, _ = companion.pair()
    assert victim.read_text() == "not a token file\n", "the pairing wrote through the planted link"
    tokens = data / "companion-tokens"
    assert tokens.is_file() and not tokens.is_symlink()
    assert oct(tokens.stat().st_mode & 0o777) == "0o600"
    assert token_id in tokens.read_text()
    assert not [p.name for p in data.iterdir() if p.name.startswith("companion-tokens.") and p.name != "companion-tokens.tmp"]
