#ifndef CI2CSHIM_H
#define CI2CSHIM_H
/// libi2c (SMBus) calls for the display bus.
int ci2c_placeholder(void);
#endif
