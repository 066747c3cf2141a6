/* cudafilter — real-time streaming convolution for audio and video.
 * The one header an application includes. */
#ifndef CUDAFILTER_H
#define CUDAFILTER_H

#include "engine.h"
#include "error.h"
#include "kernel.h"
#include "kernel2d.h"
#include "memory.h"
#include "video.h"
/* generated (the build tree's include/cudafilter): by its directory, not
 * as "version.h", which a parent project's own version.h ahead on the
 * include path would stand for (cudafilter as a Meson subproject) */
#include <cudafilter/version.h>

#endif
