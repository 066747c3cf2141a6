/* Seeds for fuzz_kernel in the formats load_audio.c's lossy-stream code
 * handles (priming, stated length, Ogg page walk): small impulse
 * responses encoded with libav through tests/avmake.c's avmake_encoded,
 * each where this libav has the encoder. Built and run by tests/fuzz/run
 * (cmocka, for avmake's checks):
 *
 *   seeds_av DIR      writes DIR/<encoder>-<rate>-<channels>.<ext>
 *   seeds_av PATH ENCODER RATE CHANNELS SAMPLES    one such file
 *
 * Then run makes from them what real files hold beside one whole audio
 * stream: a chained Ogg (two files one after the other), a cut one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <libavcodec/avcodec.h>

#include "../avmake.h"

static const char *dir;

static const char *one_path; /* seeds_av PATH ...: that one file */

static void make(const char *encoder, const char *ext, int rate,
                 int channels, size_t n)
{
  if (!avcodec_find_encoder_by_name(encoder)) {
    print_message("seeds_av: no %s encoder: no .%s seed\n", encoder, ext);
    return;
  }
  float *x[2];
  for (int c = 0; c < channels; c++) {
    x[c] = calloc(n, sizeof *x[c]);
    assert_non_null(x[c]);
    unsigned r = 12345u + (unsigned)c;
    for (size_t i = 0; i < n; i++) {
      r = r * 1103515245u + 12345u;
      /* a direct sound at 40 + 3c and a short decaying tail */
      x[c][i] = i == 40 + 3 * (size_t)c ? 0.5f
                : i < 40                ? 0.0f
                                        : 0.05f * ((float)(r >> 16) / 32768.0f - 1.0f) *
                                expf(-(float)i / (float)(n / 4));
    }
  }
  char path[4096];
  if (one_path)
    snprintf(path, sizeof path, "%s", one_path);
  else
    snprintf(path, sizeof path, "%s/%s-%d-%d.%s", dir, encoder, rate,
             channels, ext);
  avmake_encoded(path, encoder, rate, channels, x, n);
  for (int c = 0; c < channels; c++)
    free(x[c]);
}

static void seeds(void **state)
{
  (void)state;
  /* short, so that each is a few kB (the fuzzer's inputs are at most
   * 64 KiB): a few frames of each codec */
  make("libopus", "opus", 48000, 1, 2000);
  make("libopus", "opus", 48000, 2, 1500);
  make("libopus", "mka", 48000, 1, 2000);
  make("libvorbis", "ogg", 44100, 1, 3000);
  make("libvorbis", "ogg", 22050, 2, 1200);
  make("vorbis", "ogg", 48000, 2, 1000);
  make("flac", "oga", 8000, 1, 1500);
  make("flac", "oga", 44100, 2, 700);
  make("libmp3lame", "mp3", 8000, 1, 2000);
  make("libmp3lame", "mp3", 44100, 2, 2500);
  make("libmp3lame", "mka", 44100, 1, 2500);
  make("aac", "m4a", 8000, 1, 2500);
  make("aac", "m4a", 44100, 2, 2200);
  make("aac", "aac", 16000, 1, 2100);
  make("aac", "mka", 22050, 1, 2100);
}

static const char *one_encoder;
static int one_rate, one_channels;
static size_t one_n;

static void one(void **state)
{
  (void)state;
  make(one_encoder, "", one_rate, one_channels, one_n);
}

int main(int argc, char **argv)
{
  if (argc != 2 && argc != 6) {
    fprintf(stderr, "usage: %s DIR\n       %s PATH ENCODER RATE CHANNELS "
            "SAMPLES\n", argv[0], argv[0]);
    return 2;
  }
  dir = argv[1];
  if (argc == 6) {
    one_path = argv[1];
    one_encoder = argv[2];
    one_rate = atoi(argv[3]);
    one_channels = atoi(argv[4]);
    one_n = (size_t)strtoul(argv[5], NULL, 10);
    if (one_channels < 1 || one_channels > 2 || one_rate < 1 || !one_n) {
      fprintf(stderr, "%s: 1 or 2 channels, a rate and samples > 0\n",
              argv[0]);
      return 2;
    }
  }
  const struct CMUnitTest tests[] = {
      argc == 6 ? (struct CMUnitTest)cmocka_unit_test(one)
                : (struct CMUnitTest)cmocka_unit_test(seeds)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
