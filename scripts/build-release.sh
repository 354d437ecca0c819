#!/bin/sh
# Builds release binaries that know the git commit they came from (`--version`, `ctl status`):
#   scripts/build-release.sh [swift build options...]
#   scripts/build-release.sh --static-swift-stdlib --product bikecomputer     # the board's binary
# The version itself is declared in Sources/RideModel/ProjectVersion.swift (docs/releasing.md).
# SwiftPM cannot run git during a build, so this passes `git describe` in as a C define that
# Sources/CBuildInfo compiles into the binary; a plain `swift build` records no commit.
set -eu
cd "$(dirname "$0")/.."
commit=$(git describe --tags --always --dirty 2>/dev/null || true)
# Only characters git describe produces; anything else would break the define's quoting.
commit=$(printf '%s' "$commit" | tr -cd 'A-Za-z0-9._+-')
if [ -z "$commit" ]; then
    echo "build-release.sh: no git commit found (not a git checkout?): --version will say it is not recorded" >&2
fi
echo "build-release.sh: swift build -c release, commit ${commit:-unknown}"
exec swift build -c release -Xcc "-DBIKECOMPUTER_GIT_COMMIT=\"$commit\"" "$@"
