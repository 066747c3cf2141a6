/* Load libav with dlopen on first use (see av_lazy.h). The sonames come
 * from the headers we compiled against, so a mismatched libav is refused
 * instead of being called with the wrong ABI. */
#include "av_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const libs[] = {
    "libavutil.so." STR(LIBAVUTIL_VERSION_MAJOR),
    "libswresample.so." STR(LIBSWRESAMPLE_VERSION_MAJOR),
    "libavcodec.so." STR(LIBAVCODEC_VERSION_MAJOR),
    "libavformat.so." STR(LIBAVFORMAT_VERSION_MAJOR),
};
#define NLIBS (sizeof libs / sizeof *libs)

static cf_av_api api;
const cf_av_api *cf_av;
static char failure[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *find(void *const *handles, const char *name)
{
  for (size_t i = 0; i < NLIBS; i++) {
    void *p = dlsym(handles[i], name);
    if (p)
      return p;
  }
  snprintf(failure, sizeof failure, "libav has no function %s", name);
  return NULL;
}

static void load(void)
{
  void *handles[NLIBS];
  for (size_t i = 0; i < NLIBS; i++)
    if (!(handles[i] = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL))) {
      snprintf(failure, sizeof failure, "cannot load %s: %s", libs[i],
               dlerror());
      /* glibc keeps the message, malloc'ed, until the thread's next
       * dlerror: a worker thread that ended left it to LeakSanitizer */
      (void)dlerror();
      return; /* loaded libraries stay: dlclose buys nothing here */
    }
  int ok = 1;
#define CF_AV_FIND(f) ok = ok && (api.f = (__typeof__(f) *)find(handles, #f));
  CF_AV_FUNCTIONS(CF_AV_FIND)
#undef CF_AV_FIND
  if (ok)
    cf_av = &api;
}

const cf_av_api *cf_av_get(const char **why)
{
  pthread_once(&once, load);
  if (!cf_av && why)
    *why = failure;
  return cf_av;
}

bool cf_av_is_url(const char *path)
{
  /* file:NAME and file:///NAME are local files: libav strips "file:"
   * (file:///a is the path ///a, /a); taken for a URL, file:///in as
   * OUTPUT passed the OUTPUT-is-INPUT check and overwrote the input in
   * place (QA) */
  if (!strncmp(path, "file:", 5))
    return false;
  if (strstr(path, "://"))
    return true;
  const char *p = cf_av->avio_find_protocol_name(path);
  return p && strcmp(p, "file");
}

const char *cf_av_local(const char *path)
{
  return strncmp(path, "file:", 5) ? path : path + 5;
}

char *cf_av_file_name(const char *local)
{
  const char *p = cf_av->avio_find_protocol_name(local);
  bool plain = p && !strcmp(p, "file") && strncmp(local, "file:", 5);
  size_t n = strlen(local) + 6;
  char *name = malloc(n);
  if (name)
    snprintf(name, n, "%s%s", plain ? "" : "file:", local);
  return name;
}
