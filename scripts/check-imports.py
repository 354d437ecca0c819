#!/usr/bin/env python3
"""Checks the module graph (docs/architecture.md):
- Package.swift's target dependencies are exactly the modules each target imports;
- every library module has its header (`<Module>.swift` opening with `// <Module>: ...`) with a
  `// Must not import: A, B.` line, and imports none of those.
Prints what is wrong; exit 1 if anything is.

Run: python3 scripts/check-imports.py   (no build needed; reads `swift package dump-package`)."""
import json, os, re, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dump = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=root, capture_output=True, text=True, check=True).stdout)
system = {"Glibc", "Foundation", "FoundationNetworking", "Testing", "XCTest", "Dispatch", "FoundationEssentials", "Synchronization"}
# Modules that come from package products (named by their product's module).
external = {"ArgumentParser", "Hummingbird", "HummingbirdWebSocket", "Logging", "NIOCore", "SwiftConfiguration"}
# Modules a product brings along that the target may import without naming them.
transitive_ok = {"bikecompanion": {"Logging", "NIOCore"}}
local = {t["name"] for t in dump["targets"]}
bad = False
for t in dump["targets"]:
    name = t["name"]
    path = t.get("path") or (("Tests/" if t["type"] == "test" else "Sources/") + name)
    declared = set()
    products = set()
    for d in t.get("dependencies", []):
        if "byName" in d: declared.add(d["byName"][0])
        elif "target" in d: declared.add(d["target"][0])
        elif "product" in d:
            p = d["product"]
            products.add(p[0])
            aliases = p[2] if len(p) > 2 and isinstance(p[2], dict) else {}
            for a in aliases.values(): products.add(a)
    imported = set()
    excluded = {os.path.join(root, path, e) for e in t.get("exclude", [])}
    for dirpath, _, files in os.walk(os.path.join(root, path)):
        if any(dirpath.startswith(e) for e in excluded): continue
        for f in files:
            if not f.endswith(".swift"): continue
            for line in open(os.path.join(dirpath, f), encoding="utf-8"):
                m = re.match(r"\s*(?:@testable\s+|@_implementationOnly\s+)?import\s+(?:struct\s+|class\s+|enum\s+)?(\w+)", line)
                if m: imported.add(m.group(1))
    imported_local = (imported & local)
    if t["type"] == "regular" and not name.startswith("C") and name != "TestSupport":
        header = os.path.join(root, path, name + ".swift")
        forbidden = None
        if os.path.exists(header):
            text = open(header, encoding="utf-8").read()
            if not text.startswith(f"// {name}:"):
                print(f"{name}: {header} does not open with its header (// {name}: what it owns)"); bad = True
            m = re.search(r"^// Must not import: (.*)\.$", text, re.M)
            if m: forbidden = {w.strip() for w in m.group(1).split(",")}
        if forbidden is None:
            print(f"{name}: no header with a 'Must not import:' line in {header}"); bad = True
        elif imported & forbidden:
            print(f"{name}: imports {sorted(imported & forbidden)}, which its header forbids"); bad = True
    if t["type"] in ("regular", "executable", "test"):
        c_targets = {d for d in declared if d.startswith("C")}
        missing = imported_local - declared
        unused = declared - imported_local - c_targets - {"TestSupport", "board-test-helper"}
        # a C target imported only by name is fine either way
        missing -= c_targets
        unknown = imported - local - system - external - products - transitive_ok.get(name, set())
        if missing or unused or unknown:
            bad = True
            print(f"{name}: " + "; ".join(x for x in [
                f"imports but does not declare {sorted(missing)}" if missing else "",
                f"declares but does not import {sorted(unused)}" if unused else "",
                f"imports unknown {sorted(unknown)}" if unknown else ""] if x))
sys.exit(1 if bad else 0)
