#include "CBuildInfo.h"

#ifndef BIKECOMPUTER_GIT_COMMIT
#define BIKECOMPUTER_GIT_COMMIT ""
#endif

const char *bike_build_commit(void) { return BIKECOMPUTER_GIT_COMMIT; }
