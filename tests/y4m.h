/* YUV4MPEG2 files written and read here byte by byte, so a check of what
 * libav wrote does not go through libav (test_cli, test_daemon): GRAY8
 * (Cmono) or I420 (C420jpeg) frames, each tightly packed (I420: the Y,
 * U, V planes one after another). Failures end the test (cmocka). */
#ifndef CF_TEST_Y4M_H
#define CF_TEST_Y4M_H

#include <stddef.h>

/* Bytes of one frame. */
size_t y4m_frame_bytes(int i420, unsigned w, unsigned h);
/* n frames at fps frames a second. */
void y4m_write(const char *path, int i420, unsigned w, unsigned h,
               unsigned fps, unsigned char *const *frames, size_t n);
/* The frames of a file of that size and layout, packed one after another
 * into *out (malloc'ed); their count. */
size_t y4m_read(const char *path, int i420, unsigned w, unsigned h,
                unsigned char **out);

#endif
