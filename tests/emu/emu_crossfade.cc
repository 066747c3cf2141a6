// kernels/crossfade.cu compiled as C++ on the emulated runtime (cf_emu.h).
#include "crossfade.cu"
