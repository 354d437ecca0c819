"""btvirt (BlueZ's virtual controllers over hci_vhci), built at test time from BlueZ 5.66's
source (Debian's orig tarball, checked by its SHA-256) with one fix, cached under .build/vm/.

Why not Debian's btvirt (package bluez-test-tools, the same 5.66): its emulated controllers
give the two ends of a connection the lowest handle free on each side (emulator/btdev.c,
conn_link), and then tell each end the other's handle and forward ACL data with the sender's
handle. With one central connected to several peripherals, the second connection is handle 43
on the central and 42 on its peripheral: nothing the peripheral sends arrives (ATT requests
time out after 30 s). The fix picks one handle free on both ends. BlueZ upstream has the same
code at the time of writing. BlueZ is GPL-2.0-or-later / LGPL-2.1-or-later; nothing of it is
committed here."""
from __future__ import annotations

import hashlib
import pathlib
import shutil
import subprocess
import tarfile
import urllib.request

import vmlib

VERSION = "5.66"
TARBALL = f"bluez_{VERSION}.orig.tar.xz"
SHA256 = "a231fb9d151780edf6d2536c81914e2dbd3daa36b68f486badaf98a7f34021e4"
SOURCES = [f"emulator/{n}.c" for n in ("main", "serial", "server", "vhci", "btdev", "bthost", "smp", "phy", "amp", "le")] + \
          [f"src/shared/{n}.c" for n in ("util", "queue", "crypto", "ecc", "mainloop", "mainloop-notify", "io-mainloop",
                                         "timeout-mainloop")] + ["lib/bluetooth.c", "lib/hci.c"]
UNFIXED = """	conn1 = conn_new(dev, handle, type);
	if (!conn1)
		return NULL;
"""
FIXED = """	/* One handle, free on both ends: events and ACL data carry it to the other end. */
	while (queue_find(dev->conns, match_handle, UINT_TO_PTR(handle)) ||
			queue_find(remote->conns, match_handle, UINT_TO_PTR(handle)))
		handle++;

	conn1 = conn_new(dev, handle, type);
	if (!conn1)
		return NULL;
"""


def build() -> pathlib.Path:
    """The fixed btvirt binary."""
    digest = hashlib.sha256((SHA256 + FIXED + " ".join(SOURCES)).encode()).hexdigest()[:16]
    out = vmlib.CACHE / "btvirt" / f"btvirt-{VERSION}-{digest}"
    if out.exists():
        return out
    vmlib.ensure_packages(["gcc", "libc6-dev", "xz-utils"])
    base = vmlib.CACHE / "btvirt"
    base.mkdir(parents=True, exist_ok=True)
    tarball = base / TARBALL
    if not tarball.exists() or hashlib.sha256(tarball.read_bytes()).hexdigest() != SHA256:
        main, _ = vmlib.system_mirrors()
        url = f"{main}/pool/main/b/bluez/{TARBALL}"
        vmlib.log(f"downloading {url}")
        try:
            with urllib.request.urlopen(url, timeout=120) as r:
                data = r.read()
        except OSError as e:
            raise vmlib.VMUnavailable(f"cannot download BlueZ's source for btvirt ({url}): {e}") from None
        if hashlib.sha256(data).hexdigest() != SHA256:
            raise vmlib.VMUnavailable(f"{url} does not have the expected SHA-256 {SHA256}")
        tarball.write_bytes(data)
    src = base / f"bluez-{VERSION}-src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    prefix = f"bluez-{VERSION}/"
    with tarfile.open(tarball) as t:
        members = [m for m in t.getmembers() if m.isfile() and m.name.startswith(prefix)
                   and (m.name.endswith(".h") or m.name[len(prefix):] in SOURCES)]
        for m in members:
            m.name = m.name[len(prefix):]
        t.extractall(src, members=members)
    btdev = src / "emulator" / "btdev.c"
    text = btdev.read_text()
    if text.count(UNFIXED) != 1:
        raise vmlib.VMUnavailable("emulator/btdev.c's conn_link is not what Tests/vm/ble/btvirt.py patches: update the fix")
    btdev.write_text(text.replace(UNFIXED, FIXED))
    (src / "config.h").write_text(f'#define VERSION "{VERSION}"\n')
    cmd = ["gcc", "-O1", "-w", "-D_GNU_SOURCE", "-DHAVE_CONFIG_H", f"-I{src}", "-include", str(src / "config.h"),
           "-o", f"{out}.tmp", *[str(src / s) for s in SOURCES]]
    vmlib.log("building btvirt with the handle fix")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise vmlib.VMUnavailable(f"building btvirt failed:\n{r.stderr[-3000:]}")
    pathlib.Path(f"{out}.tmp").rename(out)
    shutil.rmtree(src, ignore_errors=True)
    return out


if __name__ == "__main__":
    print(build())
