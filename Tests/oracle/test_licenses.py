"""The licences README.md names are in the tree, and every file that says it is under another
licence (an SPDX header, e.g. the GPL-2.0 kernel-side test code) has that licence's text."""
import re

from conftest import REPO

SKIP_DIRS = {".build", ".venv", ".git", "node_modules"}
LICENCE_FILES = {"Apache-2.0": REPO / "LICENSE", "GPL-2.0": REPO / "LICENSES" / "GPL-2.0.txt",
                 "GPL-2.0-only": REPO / "LICENSES" / "GPL-2.0.txt", "GPL-2.0-or-later": REPO / "LICENSES" / "GPL-2.0.txt",
                 "OFL-1.1": REPO / "LICENSES" / "OFL-1.1.txt"}


def test_the_project_licence_and_the_fonts_notice():
    assert "Apache License" in (REPO / "LICENSE").read_text()[:200]
    assert "Version 2.0" in (REPO / "LICENSE").read_text()[:200]
    ofl = (REPO / "LICENSES" / "OFL-1.1.txt").read_text()
    assert "SIL OPEN FONT LICENSE Version 1.1" in ofl and "Dimitar Toshkov Zhekov" in ofl
    assert "SIL Open Font License" in (REPO / "Sources" / "Display" / "FontTables.swift").read_text()[:600]
    assert "GNU GENERAL PUBLIC LICENSE" in (REPO / "LICENSES" / "GPL-2.0.txt").read_text()[:300]
    readme = (REPO / "README.md").read_text()
    for name in ("LICENSE", "LICENSES/OFL-1.1.txt", "LICENSES/GPL-2.0.txt"):
        assert name in readme, f"README.md says what {name} covers"


def test_every_spdx_header_names_a_licence_in_the_tree():
    for path in REPO.rglob("*"):
        # .build-gpiod2 and the like (.gitignore: .build-*/) hold SwiftPM checkouts of other projects.
        if not path.is_file() or any(p in SKIP_DIRS or p.startswith(".build") for p in path.relative_to(REPO).parts):
            continue
        if path.suffix not in {".c", ".h", ".swift", ".py", ".sh", ".S"}:
            continue
        head = path.read_text(errors="replace")[:400]
        m = re.search(r"SPDX-License-Identifier:\s*([A-Za-z0-9.+-]+)", head)
        if m:
            assert m.group(1) in LICENCE_FILES, f"{path}: SPDX {m.group(1)} has no licence text in LICENSES/"
            assert LICENCE_FILES[m.group(1)].exists()
