// Per-sample rules of the video kernels (conv2d.cu): border mapping,
// typed loads and the store rules.
#ifndef CF_CONV2D_COMMON_CUH
#define CF_CONV2D_COMMON_CUH

#include "cf_device.cuh"
#include <math.h>

#include "cf_kernels.h"


// Index of virtual position i in a line of n samples, or -1 for cval
// (the CPU's map_index, src/cpu/video.c).
CF_HD inline int map_index(int i, int n, int border)
{
  if (i >= 0 && i < n)
    return i;
  switch (border) {
  case 0: // constant
    return -1;
  case 1: // nearest
    return i < 0 ? 0 : n - 1;
  case 2: { // reflect, period 2n
    int r = i % (2 * n);
    if (r < 0)
      r += 2 * n;
    return r < n ? r : 2 * n - 1 - r;
  }
  case 3: { // mirror, period 2n - 2
    if (n == 1)
      return 0;
    int r = i % (2 * n - 2);
    if (r < 0)
      r += 2 * n - 2;
    return r < n ? r : 2 * n - 2 - r;
  }
  default: { // wrap
    int r = i % n;
    return r < 0 ? r + n : r;
  }
  }
}

// The sample at p of the component's type, as float.
CF_HD inline float load_at(const cf_conv2d_args &a, const unsigned char *p)
{
  switch (a.type) {
  case 0:
    return (float)*p;
  case 1:
    return (float)*(const unsigned short *)p;
  default:
    return *(const float *)p;
  }
}

// Sample (vx, vy) of the component at `base` (virtual coordinates: the
// border mode decides), as float.
CF_HD inline float load_sample(const cf_conv2d_args &a,
                               const unsigned char *base, int vx, int vy)
{
  int y = map_index(vy, (int)a.h, a.border);
  int x = map_index(vx, (int)a.w, a.border);
  if (x < 0 || y < 0)
    return a.cval;
  const unsigned char *p = base + (size_t)y * a.pitch + (size_t)x * a.step;
  return load_at(a, p);
}

CF_HD inline const unsigned char *slice_base(const cf_conv2d_args &a,
                                              unsigned tau)
{
  unsigned slot = (a.head + a.nslots - tau) % a.nslots;
  return a.src + (size_t)slot * a.slot_bytes + a.offset;
}

// scale, bias, |.|, then the format's store (video.h).
CF_HD inline void store_pixel(const cf_conv2d_args &a, unsigned x,
                              unsigned y, float s)
{
  float v = s * a.scale + a.bias;
  if (a.absolute)
    v = fabsf(v);
  unsigned char *p = a.dst + a.offset + (size_t)y * a.pitch +
                     (size_t)x * a.step;
  if (a.type == 2) {
    *(float *)p = v;
    return;
  }
  float vmax = a.type == 0 ? 255.0f : 65535.0f;
  v = v > 0.0f ? fminf(v, vmax) : 0.0f; // NaN compares false: 0
  v = rintf(v);                           // ties to even
  if (a.type == 0)
    *p = (unsigned char)v;
  else
    *(unsigned short *)p = (unsigned short)v;
}

// A thread's RY x RX adjacent outputs of a register-blocked tile at (x0,
// y0), the thread's first (x0 + tx RX, y0 + ty RY): those in the frame and
// in the band (rows below row1).
template <int RY, int RX>
CF_HD inline void tile_store(const cf_conv2d_args &a, int x0, int y0, int tx,
                             int ty, const float (&acc)[RY][RX])
{
CF_UNROLL
  for (int j = 0; j < RY; j++) {
    const unsigned y = (unsigned)(y0 + ty * RY + j);
    if (y >= a.row1)
      break;
CF_UNROLL
    for (int i = 0; i < RX; i++) {
      const unsigned x = (unsigned)(x0 + tx * RX + i);
      if (x < a.w)
        store_pixel(a, x, y, acc[j][i]);
    }
  }
}

// Staged rows a tile reads: s[r] serves output rows li = r - (mc - 1) +
// mm (mm < mc) of the tile, and only li < left = row1 - y0 are stored.
CF_HD constexpr int tile_rows_read(int sh, int mc, int left)
{
  return left + mc - 1 < sh ? left + mc - 1 : sh;
}


#endif
