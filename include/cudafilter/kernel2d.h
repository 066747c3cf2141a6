/* cudafilter — 2D and temporal (3D) kernels for video, presets and kernel
 * files.
 *
 * A cf_kernel2d holds T x Kh x Kw float taps, row-major: taps[(tau * Kh +
 * m) * Kw + n] is k_tau[m][n]. tau = 0 applies to the current frame, tau =
 * 1 to the frame before, and so on (T = 1: plain spatial filtering). The
 * kernel is used as scipy.ndimage.convolve uses its weights (true
 * convolution, origin 0): with cy = Kh / 2 and cx = Kw / 2 (integer
 * division, so even sizes work as in scipy),
 *
 *     y_t[i][x] = sum_tau sum_m sum_n k_tau[m][n] * x_(t-tau)[i - m + cy][x - n + cx].
 */
#ifndef CUDAFILTER_KERNEL2D_H
#define CUDAFILTER_KERNEL2D_H

#include <stddef.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest kernel side (Kh, Kw), most temporal taps, most taps in all. */
#define CF_KERNEL2D_MAX_SIDE 4096u
#define CF_KERNEL2D_MAX_FRAMES 64u
#define CF_KERNEL2D_MAX_TAPS ((size_t)1 << 24)

typedef struct cf_kernel2d cf_kernel2d;

/* A kernel of t x kh x kw taps copied from `taps` (row-major as above).
 * Every tap must be finite; sizes within the limits above. */
cf_status cf_kernel2d_new(unsigned t, unsigned kh, unsigned kw,
                          const float *taps, cf_kernel2d **out);
void cf_kernel2d_free(cf_kernel2d *k);
cf_status cf_kernel2d_copy(const cf_kernel2d *k, cf_kernel2d **out);

unsigned cf_kernel2d_frames(const cf_kernel2d *k); /* T */
unsigned cf_kernel2d_height(const cf_kernel2d *k); /* Kh */
unsigned cf_kernel2d_width(const cf_kernel2d *k);  /* Kw */
/* T * Kh * Kw taps, row-major. */
const float *cf_kernel2d_taps(const cf_kernel2d *k);

/* Presets. `size` 0 and `sigma` 0 mean the preset's default; a preset
 * with a fixed size refuses any other size, and presets without a sigma
 * refuse a sigma (nothing is silently ignored). With c = (N - 1) / 2:
 *
 *   gaussian  N x N (default 5, any N >= 1), g[i] = exp(-(i - c)^2 /
 *             (2 sigma^2)) normalised to sum 1, kernel = outer(g, g);
 *             default sigma 0.3 * ((N - 1) / 2 - 1) + 0.8 (OpenCV's rule).
 *   box       N x N (default 3), every tap 1 / N^2.
 *   sharpen   3 x 3: [0 -1 0; -1 5 -1; 0 -1 0].
 *   unsharp   N x N (default 5), 2 * delta - gaussian(N, sigma): the image
 *             plus once its difference from the blurred image; the delta
 *             at the origin [N / 2][N / 2] (integer division: for an even
 *             N half a tap past the Gaussian's centre c each way), so the
 *             image is not shifted.
 *   sobel-x   3 x 3: [1 0 -1; 2 0 -2; 1 0 -1]  (convolution flips it, so
 *             brightness rising to the right gives a positive response);
 *   sobel-y   3 x 3: [1 2 1; 0 0 0; -1 -2 -1]  (positive where brightness
 *             rises downwards);
 *   laplacian 3 x 3: [0 1 0; 1 -4 1; 0 1 0];
 *   emboss    3 x 3: [-2 -1 0; -1 1 1; 0 1 2] (add bias 128 on 8-bit video
 *             for the usual grey relief).
 * All presets are spatial (T = 1). */
typedef enum cf_preset {
  CF_PRESET_GAUSSIAN,
  CF_PRESET_BOX,
  CF_PRESET_SHARPEN,
  CF_PRESET_UNSHARP,
  CF_PRESET_SOBEL_X,
  CF_PRESET_SOBEL_Y,
  CF_PRESET_LAPLACIAN,
  CF_PRESET_EMBOSS
} cf_preset;

cf_status cf_kernel2d_preset(cf_preset p, unsigned size, double sigma,
                             cf_kernel2d **out);
const char *cf_preset_name(cf_preset p);
/* "gaussian", "box", "sharpen", "unsharp", "sobel-x", "sobel-y",
 * "laplacian", "emboss". */
cf_status cf_preset_from_string(const char *s, cf_preset *out);

/* Kernel files, the format found from the content:
 *  - text: one kernel row per line (lines end with LF or CR LF; with CR
 *    where the first one does), numbers separated by whitespace and/or
 *    commas, '#' starts a comment, every row the same length; a blank
 *    line between blocks of rows separates temporal taps (tau = 0 first);
 *    rows written with decimal commas and empty fields (",,") are
 *    refused as the 1D text loader refuses them (kernel.h);
 *  - NumPy .npy (float32/float64, either byte order, C or Fortran order):
 *    2D (Kh x Kw) or 3D (T x Kh x Kw).
 * A file whose every tap is 0 is refused (CF_E_FORMAT, "holds only
 * zeros"): it would black out every picture; cf_kernel2d_new takes zeros.
 * Errors name the file, the position and the problem, as the 1D loaders. */
cf_status cf_kernel2d_load(const char *path, cf_kernel2d **out);
cf_status cf_kernel2d_load_text(const char *path, cf_kernel2d **out);
cf_status cf_kernel2d_load_npy(const char *path, cf_kernel2d **out);

#ifdef __cplusplus
}
#endif
#endif
