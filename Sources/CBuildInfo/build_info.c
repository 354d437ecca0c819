#include "CBuildInfo.h"

// The commit comes in one of two ways (docs/releasing.md):
// - scripts/build-release.sh defines BIKECOMPUTER_GIT_COMMIT on the command line (every module
//   of the package is then compiled with it, so a new commit rebuilds the package);
// - scripts/release-arm64.sh writes it into bikecomputer_commit.h in a directory it puts on the
//   include path (a flag that never changes): only this file includes the header, so a new commit
//   recompiles this file alone, and the aarch64 build stays incremental.
#if !defined(BIKECOMPUTER_GIT_COMMIT) && defined(__has_include)
#if __has_include(<bikecomputer_commit.h>)
#include <bikecomputer_commit.h>
#endif
#endif

#ifndef BIKECOMPUTER_GIT_COMMIT
#define BIKECOMPUTER_GIT_COMMIT ""
#endif

const char *bike_build_commit(void) { return BIKECOMPUTER_GIT_COMMIT; }
