// kernels/fir1d.cu compiled as C++ on the emulated runtime (cf_emu.h).
#include "fir1d.cu"
