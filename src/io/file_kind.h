/* What a path that is not a regular file is, for messages: shared by the
 * kernel loaders (src/io/load.c) and cudafilterd's config reader, which
 * both refuse such a path (a FIFO hangs or is read once, a device
 * endless) naming what it is. Header only: the daemon links the library's
 * public API alone. */
#ifndef CF_IO_FILE_KIND_H
#define CF_IO_FILE_KIND_H

#include <sys/stat.h>

static inline const char *cf_file_kind(mode_t mode)
{
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO or a pipe (as the shell's <(...) is)"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "something else";
}

#endif
