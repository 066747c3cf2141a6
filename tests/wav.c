/* WAV files written and read byte by byte (tests/wav.h). */
#include "wav.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka after the headers it needs */
#include <cmocka.h>

const unsigned wav_bytes[] = {2, 3, 4, 4};
const char *const wav_names[] = {"s16", "s24", "s32", "f32"};

void put_le(unsigned char *p, uint64_t v, unsigned n)
{
  for (unsigned i = 0; i < n; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* x holds frames * ch values, integers already quantised (x * 2^(bits-1)
 * exact) for the integer kinds. */
void write_wav(const char *path, int kind, unsigned rate, unsigned ch,
               const float *x, size_t frames)
{
  unsigned b = wav_bytes[kind];
  size_t data = frames * ch * b;
  unsigned char hdr[44];
  memcpy(hdr, "RIFF", 4);
  put_le(hdr + 4, 36 + data, 4);
  memcpy(hdr + 8, "WAVEfmt ", 8);
  put_le(hdr + 16, 16, 4);
  put_le(hdr + 20, kind == W_F32 ? 3 : 1, 2);
  put_le(hdr + 22, ch, 2);
  put_le(hdr + 24, rate, 4);
  put_le(hdr + 28, (uint64_t)rate * ch * b, 4);
  put_le(hdr + 32, ch * b, 2);
  put_le(hdr + 34, 8 * b, 2);
  memcpy(hdr + 36, "data", 4);
  put_le(hdr + 40, data, 4);
  unsigned char *buf = malloc(data + 1);
  assert_non_null(buf);
  for (size_t i = 0; i < frames * ch; i++) {
    if (kind == W_F32) {
      memcpy(buf + 4 * i, &x[i], 4);
    } else {
      double s = ldexp((double)x[i], 8 * (int)b - 1);
      double top = ldexp(1.0, 8 * (int)b - 1);
      if (!(s >= -top && s < top) || s != floor(s))
        fail_msg("write_wav: sample %zu (%.9g) is not a %u-byte integer "
                 "(it would wrap)",
                 i, (double)x[i], b);
      put_le(buf + b * i, (uint64_t)(int64_t)s, b);
    }
  }
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(hdr, 1, 44, f), 44);
  assert_int_equal(fwrite(buf, 1, data, f), data);
  assert_int_equal(fclose(f), 0);
  free(buf);
}

uint32_t get_le(const unsigned char *p, unsigned n)
{
  uint32_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}

/* Parse a WAV file (plain or WAVE_FORMAT_EXTENSIBLE); fails the test if
 * it is not one. */
void read_wav(const char *path, wav *w)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)size);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  assert_true(size >= 12 && !memcmp(buf, "RIFF", 4) &&
              !memcmp(buf + 8, "WAVE", 4));
  unsigned fmt = 0, bits = 0;
  memset(w, 0, sizeof *w);
  for (long at = 12; at + 8 <= size;) {
    uint32_t len = get_le(buf + at + 4, 4);
    const unsigned char *c = buf + at + 8;
    if (!memcmp(buf + at, "fmt ", 4)) {
      fmt = get_le(c, 2);
      w->ch = get_le(c + 2, 2);
      w->rate = get_le(c + 4, 4);
      bits = get_le(c + 14, 2);
      if (fmt == 0xfffe)
        fmt = get_le(c + 24, 2); /* the sub-format GUID's first bytes */
    } else if (!memcmp(buf + at, "data", 4)) {
      assert_true(fmt == 1 || fmt == 3);
      w->kind = fmt == 3     ? W_F32
                : bits == 16 ? W_S16
                : bits == 24 ? W_S24
                             : W_S32;
      assert_true(fmt == 3 ? bits == 32
                           : (bits == 16 || bits == 24 || bits == 32));
      unsigned b = bits / 8;
      if (len > (uint64_t)(size - at - 8))
        len = (uint32_t)(size - at - 8);
      w->frames = len / (b * w->ch);
      w->x = malloc((w->frames * w->ch + 1) * sizeof *w->x);
      assert_non_null(w->x);
      for (size_t i = 0; i < w->frames * w->ch; i++) {
        uint32_t u = get_le(c + b * i, b);
        if (fmt == 3) {
          float v;
          memcpy(&v, &u, 4);
          w->x[i] = v;
        } else {
          int64_t s = (int64_t)u;
          if (u >> (bits - 1) & 1)
            s -= (int64_t)1 << bits;
          w->x[i] = (double)s;
        }
      }
      break;
    }
    at += 8 + len + (len & 1);
  }
  assert_non_null(w->x);
  free(buf);
}
