"""Issue 31 item 4 on the package a rider installs (issue 26): the power cut during an upgrade of
the Debian package, on the arm64 Debian 12 system booted with systemd under qemu-system-aarch64
(arm64_system.image, as test_vm_package.py), with the aarch64 binaries.

The set-up installs the previous version (`apt install ./previous.deb`: this build's package one
version back, test_vm_package.previous_version) and wires and pairs the unit as a rider does.
Each cut then comes during `apt install` of the other version (an upgrade to the current one, or
back: dpkg unpacks over the running unit and restarts it either way) with a ride in progress, at
a seeded moment of a seeded step (PHASES): the old version's prerm, dpkg unpacking the files,
the postinst making the accounts, the rest of the postinst restarting the units. After every cut
(guest_powercut.checks, the same as the install.sh loop's, and guest_powercut.finish_the_upgrade):

- on the host, `e2fsck` on copies of both disks as the cut left them: the journal replayed,
  nothing else to repair;
- the next boot has the app running and answering on whichever binary dpkg had left, the
  rider's config valid (a conffile), the ride in progress recovered with at most 1 s lost, every
  shown ride listed;
- the rider's recovery (docs/board.md, "If the power goes during an upgrade"): `dpkg -i` of
  the same file ends with the package installed ("ii") at the version being installed, `dpkg
  --audit` silent, and the same ride in progress.

The seed (`PACKAGE_POWERCUT_SEED`, default 28: the unpacking, then the postinst) chooses the
steps and moments; CI makes `PACKAGE_POWERCUT_CUTS` = CI_CUTS cuts; every step once takes 4, and
longer runs are documented in docs/power.md. `PACKAGE_POWERCUT_AT=PHASE:SECONDS` makes the one
cut given instead (a delay longer than the step shows the retry: apt finished first, the upgrade
goes again the other way with the cut at half the step's measured time,
guest_powercut.PACKAGE_ATTEMPTS):

    PACKAGE_POWERCUT_CUTS=4 BIKE_ARM64_RELEASE=.build/release-arm64 bash Tests/vm/run -k package_powercut

Every cut's moment, apt's lines with their times, checks and fsck output:
.build/vm/package-powercut-SEED.json.
"""
from __future__ import annotations

import os
import random

import pytest

import arm64_system
import builds
import system
import system_fixtures as sf
import test_vm_powercut as loop_of
from conftest import guest_result, launcher, prepared
from test_vm_package import arm64_inputs, previous_version

# Each cut boots the arm64 guest twice over under TCG (the cut's boot; the next one's checks and
# the recovery's dpkg and apt runs): about 5 min a cut on the 2-core host.
CI_CUTS = 2
# Where the cut comes: a delay (s) after one of apt's lines, within what that step took at its
# quickest (under TCG, load ~3.5: the whole upgrade 164 s, the unpacking 48 s; in CI's package
# test 78 s in all): the old version's prerm (before the unpacking), the unpacking (files
# written as .dpkg-new and renamed), the postinst's accounts, and the rest of the postinst (the
# tmpfiles, the bridge's byte code, udev, the units' restart: SIGTERM to the riding app).
# A quicker host finishes a step before its delay (the project's CI of stop 50: the postinst
# 16.3 s, the delay 17.8 s): the guest then upgrades again with a shorter one
# (guest_powercut.PACKAGE_ATTEMPTS).
PHASES = [("prerm", "Preparing to unpack", (0.0, 0.5)), ("unpacking", "Unpacking bikecomputer", (0.0, 20.0)),
          ("accounts", "Setting up bikecomputer", (0.0, 1.5)), ("postinst", "the bridge's user bikebridge", (0.0, 25.0))]


def schedule(seed: int, cuts: int) -> list[tuple[str, str, float]]:
    """(phase, apt's line, the delay after it) for each cut: every phase once in a seeded order,
    then seeded choices."""
    rng = random.Random(seed)
    order = PHASES[:]
    rng.shuffle(order)
    out = []
    for i in range(cuts):
        phase, line, window = order[i] if i < len(order) else rng.choice(PHASES)
        out.append((phase, line, round(rng.uniform(*window), 2)))
    return out


def package_loop(k, modules, release) -> dict:
    seed = int(os.environ.get("PACKAGE_POWERCUT_SEED", "28"))
    cuts = int(os.environ.get("PACKAGE_POWERCUT_CUTS", str(CI_CUTS)))
    assert cuts >= 1, f"PACKAGE_POWERCUT_CUTS={cuts}: at least one cut"
    image = arm64_system.image(k, modules)
    current = builds.arm64_deb(release)
    work = sf.prepare_outdir("package-powercut-debs")
    previous = previous_version(current, work)
    env = dict(sf.true_env(), BIN_DIR="/usr/bin", PACKAGE_PREVIOUS="/out/previous.deb", PACKAGE_CURRENT="/out/current.deb")
    vm = system.System(k, image, memory_mb=1024)
    plan = schedule(seed, cuts)
    if os.environ.get("PACKAGE_POWERCUT_AT"):  # one cut, PHASE:SECONDS (to reproduce one, or a late one)
        phase, _, at = os.environ["PACKAGE_POWERCUT_AT"].partition(":")
        lines = {p: line for p, line, _ in PHASES}
        assert phase in lines and at, f"PACKAGE_POWERCUT_AT={os.environ['PACKAGE_POWERCUT_AT']}: PHASE:SECONDS, PHASE one of {list(lines)}"
        plan = [(phase, lines[phase], float(at))]
    return loop_of.run_loop(vm, "package-powercut", [("package-upgrade", at) for _, _, at in plan], seed, env,
                            files={"previous.deb": previous, "current.deb": current}, timeout_s=900,
                            env_of=[{"PACKAGE_CUT_LINE": line, "PACKAGE_CUT_PHASE": phase} for phase, line, _ in plan])


@launcher(__name__, order=0)  # the longest of the arm64 guests: first
def _start(request):
    k, modules, release = arm64_inputs(request)
    return sf.Background(lambda: package_loop(k, modules, release), "the package's power-cut loop (arm64)")


@pytest.fixture(scope="module")
def loop(guests):
    return prepared("the package's power-cut loop (arm64)", lambda: guest_result(guests, __name__))


def test_every_cut_during_a_package_upgrade_was_made_in_dpkg(loop):
    made = [c for c in loop["cuts"] if c["killed"]]
    assert len(made) == loop["cuts_planned"], loop["cuts"][-1]
    # The cut came while apt was still at work: the log's last line is not apt's exit (an
    # attempt that apt finished first is followed by the next one's line: guest_powercut.PACKAGE_ATTEMPTS).
    late = [(c["iteration"], c["upgrade_log"][-300:]) for c in made
            if "apt exit" in (c.get("upgrade_log") or "apt exit").rstrip().splitlines()[-1]]
    assert not late, late
    print(f"package power-cut loop: seed {loop['seed']}, {len(made)} cuts in {loop['seconds']} s: "
          + ", ".join(f"{c['env']['PACKAGE_CUT_PHASE']} +{c['at_s']} s" + retried(c) for c in made))


def retried(cut: dict) -> str:
    """How many upgrades apt finished before the seeded cut (guest_powercut.PACKAGE_ATTEMPTS)."""
    again = sum(line.startswith("attempt ") for line in cut.get("upgrade_log", "").splitlines())
    return f" (apt finished first {again} time{'s' if again > 1 else ''}: cut in upgrade {again + 1})" if again else ""


def test_no_file_system_needs_repair_after_a_cut_during_an_upgrade(loop):
    loop_of.test_no_file_system_needs_repair_after_any_cut(loop)


def test_every_boot_after_a_cut_during_an_upgrade_has_the_app_and_the_ride(loop):
    loop_of.test_every_boot_after_a_cut_comes_up_whole(loop)


def test_the_riders_recovery_finishes_every_interrupted_upgrade(loop):
    finished = [c["package"] for _, c in loop_of.checks_after(loop) if c.get("package")]
    interrupted = [c for c in loop["cuts"] if c["killed"]]
    assert len(finished) == len(interrupted), (finished, [c.get("upgrade_log", "")[-300:] for c in interrupted])
    for f in finished:
        assert f["state"].startswith("ii ") and f["dpkg_exit"] == 0 and not f["audit_after"].strip(), f
    print("dpkg as the cuts left it: " + ", ".join(f["left"] for f in finished))
