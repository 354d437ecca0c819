#ifndef CGPIODSHIM_H
#define CGPIODSHIM_H
/// One small API over libgpiod v1 (Debian 12) or v2 (Debian 13), chosen at compile time.
int cgs_api_version(void);
#endif
