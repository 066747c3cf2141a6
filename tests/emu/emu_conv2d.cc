// kernels/conv2d.cu compiled as C++ on the emulated runtime (cf_emu.h).
#include "conv2d.cu"
