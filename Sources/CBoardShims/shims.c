#include "CBoardShims.h"
#include <unistd.h>

int cbs_fdatasync(int fd) { return fdatasync(fd); }
