/* Media files for the tests, written with libav (avmake.c). */
#ifndef CF_TESTS_AVMAKE_H
#define CF_TESTS_AVMAKE_H

#include <stdint.h>

/* GRAY8 frames (rawvideo) in Matroska at times pts[] (ms), said to be at
 * fps (its DefaultDuration); frame i's pixels all (i * 37) % 256.
 * Fails the test where libav cannot write it. */
void frames_at(const char *path, unsigned w, unsigned h, unsigned nf, int fps,
               const int64_t *pts);

#endif
