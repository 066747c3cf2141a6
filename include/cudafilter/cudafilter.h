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
#include "version.h"

#endif
