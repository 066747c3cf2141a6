/* WAV written and read here byte by byte, so a check of what libav
 * wrote does not go through libav (test_cli, test_daemon). Failures end
 * the test (cmocka). */
#ifndef CF_TEST_WAV_H
#define CF_TEST_WAV_H

#include <stddef.h>
#include <stdint.h>

/* Sample kinds: 16/24/32-bit integer, 32-bit float. */
enum { W_S16, W_S24, W_S32, W_F32 };
extern const unsigned wav_bytes[];    /* bytes a sample */
extern const char *const wav_names[]; /* "s16", ... */

void put_le(unsigned char *p, uint64_t v, unsigned n);
uint32_t get_le(const unsigned char *p, unsigned n);

/* x holds frames * ch values, integers already quantised (x * 2^(bits-1)
 * exact) for the integer kinds. */
void write_wav(const char *path, int kind, unsigned rate, unsigned ch,
               const float *x, size_t frames);

typedef struct wav {
  int kind;
  unsigned rate, ch;
  size_t frames;
  double *x; /* integer kinds: the integers; float: the values */
} wav;

/* Parse a WAV file (plain or WAVE_FORMAT_EXTENSIBLE); fails the test if
 * it is not one. */
void read_wav(const char *path, wav *w);

#endif
