#ifndef CBUILDINFO_H
#define CBUILDINFO_H

/// The git commit the binary was built from ("" when the build did not say).
/// scripts/build-release.sh passes it as -Xcc -DBIKECOMPUTER_GIT_COMMIT="\"...\"": a SwiftPM
/// build cannot run git by itself, and a C define is the one value a command line can carry
/// into the build (docs/releasing.md).
const char *bike_build_commit(void);

#endif
