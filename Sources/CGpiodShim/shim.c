#include "CGpiodShim.h"
#include <gpiod.h>
int cgs_api_version(void) { return 0; }
