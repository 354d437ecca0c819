#ifndef CBOARDSHIMS_H
#define CBOARDSHIMS_H
/// Small C helpers for calls Swift cannot make directly (variadic ioctl/fcntl, fdatasync).
int cbs_fdatasync(int fd);
#endif
