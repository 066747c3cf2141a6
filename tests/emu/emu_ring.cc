// kernels/ring.cu compiled as C++ on the emulated runtime (cf_emu.h).
#include "ring.cu"
