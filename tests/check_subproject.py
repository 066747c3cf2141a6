#!/usr/bin/env python3
"""cudafilter as a Meson subproject, as a parent project meets it
(README: dependency('cudafilter-1.0', fallback: ['cudafilter',
'cudafilter_dep'])): a parent in a temporary folder with this source tree
as subprojects/cudafilter and a version.h of its own on its include path
(a common name), whose program includes <cudafilter/cudafilter.h> and its
own "version.h" and uses both. Configured (cuda, gstreamer, portaudio,
libav, tests disabled, bench off: the library alone), then only the
program's object file compiled: the headers as cudafilter_dep gives them,
without building the library; and configure's summary saying why each
part is left out. About 5 s.

  check_subproject.py SOURCE_ROOT -- MESON [ARGS...]"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

PARENT_MESON = """project('parent', 'c', default_options: ['c_std=c11'])
cf = dependency('cudafilter-1.0', fallback: ['cudafilter', 'cudafilter_dep'],
  default_options: ['cuda=disabled', 'gstreamer=disabled',
                    'portaudio=disabled', 'libav=disabled',
                    'tests=disabled', 'bench=false'])
executable('app', 'src/app.c', include_directories: include_directories('include'),
  dependencies: cf)
"""

# the parent's own version.h, before cudafilter's on the include path
PARENT_VERSION_H = """#ifndef PARENT_VERSION_H
#define PARENT_VERSION_H
#define PARENT_VERSION "9.9"
#endif
"""

APP = r"""
#include <cudafilter/cudafilter.h>
#include "version.h"
#include <stdio.h>

int main(void)
{
  printf("parent %s, cudafilter %s (header %s, %d.%d.%d)\n", PARENT_VERSION,
         cf_version(), CF_VERSION_STRING, CF_VERSION_MAJOR, CF_VERSION_MINOR,
         CF_VERSION_MICRO);
  return 0;
}
"""


def main():
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[1] != '--':
        print(__doc__)
        return 2
    src, meson = os.path.abspath(argv[0]), argv[2:]
    with tempfile.TemporaryDirectory(prefix='cf-parent-') as tmp:
        os.makedirs(os.path.join(tmp, 'subprojects'))
        os.makedirs(os.path.join(tmp, 'include'))
        os.makedirs(os.path.join(tmp, 'src'))
        os.symlink(src, os.path.join(tmp, 'subprojects', 'cudafilter'))
        for path, text in (('meson.build', PARENT_MESON),
                           ('include/version.h', PARENT_VERSION_H),
                           ('src/app.c', APP)):
            with open(os.path.join(tmp, path), 'w') as f:
                f.write(text)
        b = os.path.join(tmp, 'b')
        r = subprocess.run(meson + ['setup', b, tmp], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            print(r.stdout[-4000:])
            print('FAIL: the parent project does not configure')
            return 1
        # configure's summary names each part the options left out and
        # what it lacks: a packager building without PortAudio saw only a
        # 'found: NO' among the configure lines
        summary = r.stdout[r.stdout.find('cudafilter 0.'):]
        want = ['CUDA backend', 'libav kernel files', 'GStreamer plugin',
                'daemon live audio', 'tests']
        missing = [w for w in want if not re.search(
            r'^\s*' + re.escape(w) + r'\s*: NO \(\S', summary, re.M)]
        if missing:
            print(summary[:3000])
            print('FAIL: the configure summary does not say why there is no '
                  + ', '.join(missing))
            return 1
        # the program's object alone (the headers, not the library)
        ninja = shutil.which('ninja') or shutil.which('samu')
        if not ninja:
            print('skipped: no ninja or samu to build one object with')
            return 77
        r = subprocess.run([ninja, '-C', b, 'app.p/src_app.c.o'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if r.returncode:
            print(r.stdout[-4000:])
            print('FAIL: a parent program with a version.h of its own does '
                  'not compile against cudafilter_dep: <cudafilter/'
                  'cudafilter.h> took the parent\'s version.h for its own')
            return 1
    print('ok: a parent project with its own version.h compiles against '
          'cudafilter-1.0 as a subproject')
    return 0


if __name__ == '__main__':
    sys.exit(main())
