/* libcuda.so.1 for GStreamer's gstcuda on the emulated device: the driver
 * calls it loads are defined in the emulated libcudafilter.so.0
 * (tests/emu/cuda_driver_emu.cc), which this library depends on, so that
 * dlsym on this library finds them. The reference keeps the dependency
 * (--as-needed). */
typedef int (*cf_emu_init_fn)(unsigned);
extern int cuInit(unsigned flags);
const cf_emu_init_fn cf_emu_libcuda_anchor = cuInit;
