// kernels/conv2d_fft.cu compiled as C++ on the emulated runtime (cf_emu.h).
#include "conv2d_fft.cu"
