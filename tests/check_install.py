#!/usr/bin/env python3
"""The installed tree as a packager and an application developer meet it:
`meson install --destdir` into a temporary folder, then

  - every file under the prefix, no test or bench program among them;
  - the headers in includedir/cudafilter, each one compiling alone as C89,
    C99, C11, C++98 and C++17 (-Wall -Wextra -pedantic -Werror), found through the
    installed cudafilter-1.0.pc (--cflags, and --static --libs resolving);
  - every function the headers declare called from C and from C++ by its
    plain (extern "C") name, and libcudafilter exporting exactly those;
  - libcudafilter.so -> .so.0 -> .so.X.Y.Z, SONAME libcudafilter.so.0
    (default_library shared or both);
  - libcudafilter.a (static or both) with none of its internal functions
    visible, and the .pc's --static --libs enough to link it;
  - a small application filtering a signal through the installed
    library, checked against a plain convolution: linked with pkg-config
    --libs against the .so (shared, both), and with --static --libs
    against libcudafilter.a alone (static, both);
  - the GStreamer plugin exporting no cf_* function;
  - the programs and the GStreamer plugin finding libcudafilter where it
    was installed (RUNPATH), outside the prefix /usr the loader searches;
  - no installed file naming the build or source folder or a temporary
    file of nvcc's (reproducible builds);
  - a manual page for every program in bindir;
  - the systemd unit's ExecStart an installed program, and the example
    config, copied to ~/.config/cudafilterd.conf as the unit reads it,
    checking out (cudafilterd --check).

  check_install.py BUILD_ROOT CC [CC ARGS...] -- CXX|'' -- MESON [ARGS...]

CXX '' (no C++ compiler found) skips the C++ checks, saying so."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)


def declared(headers):
    """The functions the headers declare (comments and # lines left out)."""
    names = set()
    for h in headers:
        src = re.sub(r'/\*.*?\*/', ' ', open(h).read(), flags=re.S)
        src = re.sub(r'^\s*#.*(?:\\\n.*)*', ' ', src, flags=re.M)
        names |= set(re.findall(r'\b(cf_\w+)\s*\(', src))
    return names


def elf_dynamic(path):
    out = run(['readelf', '-d', path]).stdout
    needed = re.findall(r'\(NEEDED\).*\[(.*)\]', out)
    runpath = re.findall(r'\((?:RUNPATH|RPATH)\).*\[(.*)\]', out)
    soname = re.findall(r'\(SONAME\).*\[(.*)\]', out)
    return needed, ':'.join(runpath).split(':') if runpath else [], soname

# An application of the installed library: a signal through a CPU engine
# (an FFT path: FFTW's plans, worker threads) in uneven pieces, drained,
# against a plain convolution in double.
CONSUMER = r"""
#include <cudafilter/cudafilter.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 3000
#define L 100
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static float uni(void)
{
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

int main(void)
{
  static float x[N], h[L], y[N + 4096];
  cf_kernel *k = NULL;
  cf_engine *e = NULL;
  cf_audio_config cfg;
  size_t i, n, got = 0;
  double worst = 0, scale = 0;
  for (i = 0; i < N; i++)
    x[i] = uni();
  for (i = 0; i < L; i++)
    scale += fabs(h[i] = uni());
  cf_audio_config_init(&cfg);
  cfg.backend = CF_BACKEND_CPU;
  cfg.algorithm = CF_ALGO_FFT_UNIFORM;
  cfg.block_size = 64;
  cfg.threads = 2;
  if (cf_kernel_new_shared(h, L, &k) != CF_OK ||
      cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
    fprintf(stderr, "engine: %s\n", cf_last_error());
    return 1;
  }
  for (i = 0; i < N; i += n, got += n) {
    n = N - i < 37 ? N - i : 37;
    if (cf_engine_process(e, x + i, y + got, n) != CF_OK) {
      fprintf(stderr, "process: %s\n", cf_last_error());
      return 1;
    }
  }
  n = cf_engine_tail(e);
  if (n != cf_engine_latency(e) + L - 1 || got + n > sizeof y / sizeof *y ||
      cf_engine_drain(e, y + got, n, &n) != CF_OK) {
    fprintf(stderr, "drain: %s\n", cf_last_error());
    return 1;
  }
  for (i = 0; i < N + L - 1; i++) {
    double want = 0;
    size_t j;
    for (j = 0; j < L; j++)
      if (i >= j && i - j < N)
        want += (double)h[j] * x[i - j];
    want -= y[i + cf_engine_latency(e)];
    if (fabs(want) > worst)
      worst = fabs(want);
  }
  printf("%s: %zu frames, worst error %.3g of %.3g\n", cf_engine_describe(e),
         (size_t)N, worst, scale);
  cf_engine_free(e);
  cf_kernel_free(k);
  return worst <= 1e-5 * scale ? 0 : 2;
}
"""


def consumer(cc, tmp, env, static, libdir, prefix, sanitize):
    """Build CONSUMER against the installed .pc (static: --static --libs,
    libcudafilter.a asked for by its file name) and run it; its failure.
    The .pc's prefix moved to the staged one (prefix), not a sysroot: that
    would move the paths of the other libraries it names (cudart's -L).
    sanitize: the build's b_sanitize ('none', 'address,undefined', or a
    list), which the application is built with too: a library built with
    ASan needs its runtime first (the application, built without it,
    stopped: "ASan runtime does not come first"), an archive its symbols."""
    kind = 'static' if static else 'shared'
    env = dict(env)
    env.pop('PKG_CONFIG_SYSROOT_DIR', None)
    src = os.path.join(tmp, 'consumer.c')
    with open(src, 'w') as f:
        f.write(CONSUMER)
    flags = []
    for a in (['--cflags'], ['--static', '--libs'] if static else ['--libs']):
        r = run(['pkg-config', '--define-variable=prefix=' + prefix] + a +
                ['cudafilter-1.0'], env=env)
        if r.returncode:
            return 'pkg-config %s cudafilter-1.0: %s' % (' '.join(a),
                                                        r.stdout.strip())
        flags.append(r.stdout.split())
    libs = flags[1]
    if static:
        # where both are installed the linker takes the .so for
        # -lcudafilter: ask for the archive by its name
        libs = ['-l:libcudafilter.a' if a == '-lcudafilter' else a
                for a in libs]
    exe = os.path.join(tmp, 'consumer-' + kind)
    if isinstance(sanitize, (list, tuple)):
        sanitize = ','.join(sanitize)
    san = ['-fsanitize=' + sanitize] if sanitize and sanitize != 'none' \
        else []
    r = run(cc + ['-std=c11', '-Wall', '-Werror'] + san + flags[0] +
            [src, '-o', exe] + libs + ['-lm'])
    if r.returncode:
        return 'a %s application of the installed .pc (%s) does not ' \
            'link:\n%s' % (kind, ' '.join(libs), r.stdout)
    needed = elf_dynamic(exe)[0]
    if static and any(n.startswith('libcudafilter') for n in needed):
        return 'the static application needs %s' % needed
    if not static and 'libcudafilter.so.0' not in needed:
        return 'the shared application does not need libcudafilter.so.0 ' \
            '(%s)' % needed
    r = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    print('%s application: %s' % (kind, r.stdout.strip()))
    if r.returncode:
        return 'the %s application of the installed library: exit %d:\n%s' \
            % (kind, r.returncode, r.stdout)
    return None


def main():
    argv = sys.argv[1:]
    build = argv[0]
    i = argv.index('--')
    cc = argv[1:i]
    j = argv.index('--', i + 1)
    cxx = argv[i + 1:j]
    cxx = [] if cxx == [''] else cxx
    meson = argv[j + 1:]

    opts = {o['name']: o['value'] for o in json.load(
        open(os.path.join(build, 'meson-info', 'intro-buildoptions.json')))}
    prefix = opts['prefix']
    absd = lambda d: d if os.path.isabs(d) else os.path.join(prefix, d)
    libdir, incdir = absd(opts['libdir']), absd(opts['includedir'])
    bindir, mandir = absd(opts['bindir']), absd(opts['mandir'])
    installed = json.load(open(os.path.join(build, 'meson-info',
                                            'intro-installed.json')))
    bad = []

    # nothing from the test and bench trees, nothing outside the prefix
    for src, dst in installed.items():
        rel = os.path.relpath(src, build)
        if rel.split(os.sep)[0] in ('tests', 'bench'):
            bad.append('installs %s (%s)' % (rel, dst))
        if os.path.commonpath([prefix, dst]) != prefix:
            bad.append('installs %s outside the prefix %s' % (dst, prefix))

    tmp = tempfile.mkdtemp(prefix='cf-install-', dir=os.environ.get(
        'CF_TEST_TMP') if os.path.isdir(os.environ.get('CF_TEST_TMP', ''))
        else None)
    try:
        dest = os.path.join(tmp, 'dest')
        r = run(meson + ['install', '-C', build, '--no-rebuild', '--quiet',
                         '--destdir', dest])
        if r.returncode:
            print(r.stdout)
            print('FAIL: meson install --destdir')
            return 1
        D = lambda p: dest + p
        for f in glob.glob(D('/**'), recursive=True):
            if not os.path.isdir(f) and os.path.commonpath(
                    [D(prefix), f]) != D(prefix):
                bad.append('%s: outside the prefix' % f[len(dest):])

        # reproducible: no installed file names the build or source
        # folder, nor one of nvcc's temporary files (tmpxft_<pid>_...: the
        # kernels' objects' STT_FILE symbols were named after nvcc's
        # process id, and two builds of one tree differed)
        srcroot = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # (a folder's path with its slash, when long enough that binary
        # data cannot hold it by chance; not with debug information, whose
        # DW_AT_comp_dir is the build folder unless -ffile-prefix-map says
        # otherwise, as a distribution's build flags do)
        marks = [(p.encode(), what) for p, what in (
            (os.path.join(os.path.abspath(build), ''), 'the build folder'),
            (os.path.join(srcroot, ''), 'the source folder'))
            if len(p) >= 8 and not opts.get('debug')]
        marks.append((b'tmpxft_', "nvcc's temporary file names"))
        for f in sorted(glob.glob(D('/**'), recursive=True)):
            if os.path.isfile(f) and not os.path.islink(f):
                data = open(f, 'rb').read()
                for m, what in marks:
                    if m in data:
                        bad.append('%s holds %s (%s): it differs from one '
                                   'build to another' % (f[len(dest):], what,
                                                         m.decode()))

        # headers: each alone, C and C++
        srcdir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        want = sorted(os.path.basename(h) for h in glob.glob(
            os.path.join(srcdir, 'include', 'cudafilter', '*.h')))
        want = sorted(want + ['version.h'])
        hdir = D(os.path.join(incdir, 'cudafilter'))
        got = sorted(os.listdir(hdir)) if os.path.isdir(hdir) else []
        if got != want:
            bad.append('includedir/cudafilter holds %s, not %s' % (got, want))
        headers = [os.path.join(hdir, h) for h in got]

        pcdir = D(os.path.join(libdir, 'pkgconfig'))
        pc = os.path.join(pcdir, 'cudafilter-1.0.pc')
        cflags = ['-I' + D(incdir)]
        pc_env = None
        if not os.path.exists(pc):
            bad.append('no %s' % pc[len(dest):])
        elif not shutil.which('pkg-config'):
            print('skipped: the .pc checks (no pkg-config)')
        else:
            env = dict(os.environ, PKG_CONFIG_PATH=pcdir,
                       PKG_CONFIG_SYSROOT_DIR=dest)
            env.pop('PKG_CONFIG_LIBDIR', None)
            pc_env = env
            for a in (['--cflags'], ['--libs'], ['--static', '--libs']):
                r = run(['pkg-config'] + a + ['cudafilter-1.0'], env=env)
                if r.returncode:
                    bad.append('pkg-config %s cudafilter-1.0: %s' %
                               (' '.join(a), r.stdout.strip()))
                elif a == ['--cflags']:
                    cflags = r.stdout.split()

        names = declared(headers)
        tus = []
        for h in got:
            p = os.path.join(tmp, 'h_' + h.replace('.', '_') + '.c')
            with open(p, 'w') as f:
                f.write('#include <cudafilter/%s>\n' % h)
            tus.append(p)
        # every declared function called by its name: a C++ caller without
        # extern "C" would ask for a mangled one
        use = os.path.join(tmp, 'use.c')
        with open(use, 'w') as f:
            f.write('#include <cudafilter/cudafilter.h>\n'
                    'typedef void (*fn)(void);\n'
                    'fn cf_all[] = {\n%s};\n' % ''.join(
                        '  (fn)%s,\n' % n
                        for n in sorted(names)))
        # C89 and C++98 too: an application's build may be older than
        # ours (a // comment, an inline or a bool in a header breaks it)
        langs = [(l, cc + ['-x', 'c', '-std=' + l.lower(),
                           '-Wstrict-prototypes'])
                 for l in ('C89', 'C99', 'C11')]
        if cxx:
            langs += [(l, cxx + ['-x', 'c++', '-std=' + l.lower()])
                      for l in ('C++98', 'C++17')]
        else:
            print('skipped: the headers as C++ (no C++ compiler: c++, g++ '
                  'or clang++)')
        for lang, comp in langs:
            base = comp + ['-Wall', '-Wextra', '-pedantic', '-Werror'] + cflags
            r = run(base + ['-fsyntax-only'] + tus)
            if r.returncode:
                bad.append('the headers alone as %s:\n%s' % (lang, r.stdout))
            obj = os.path.join(tmp, 'use-%s.o' % lang)
            r = run(base + ['-c', use, '-o', obj])
            if r.returncode:
                bad.append('every declared function from %s:\n%s' %
                           (lang, r.stdout))
                continue
            und = set(run(['nm', '-u', obj]).stdout.split()) - {'U'}
            wrong = sorted(u for u in und if u not in names)
            wrong += sorted('%s not asked for' % n for n in names - und)
            if wrong:
                bad.append('%s asks for %s, not the names the headers '
                           'declare (extern "C" missing?)' %
                           (lang, ', '.join(wrong[:8])))

        # the library: its links, its name, what it exports
        kinds = {'shared': ['shared'], 'static': ['static'],
                 'both': ['shared', 'static']}[opts['default_library']]
        archive = D(os.path.join(libdir, 'libcudafilter.a'))
        if 'static' in kinds and not os.path.isfile(archive):
            bad.append('default_library=%s installs no %s' %
                       (opts['default_library'], archive[len(dest):]))
        if 'static' not in kinds and os.path.exists(archive):
            bad.append('default_library=shared installs %s' %
                       archive[len(dest):])
        if 'static' in kinds and os.path.isfile(archive):
            # the archive's global functions that a program can reach: the
            # declared ones (-fvisibility=hidden keeps the rest inside the
            # program or plugin that links them in)
            out = run(['readelf', '-sW', archive]).stdout
            visible = set()
            for ln in out.splitlines():
                f = ln.split()
                if len(f) >= 8 and f[4] in ('GLOBAL', 'WEAK') and \
                        f[5] == 'DEFAULT' and f[6] != 'UND':
                    visible.add(f[7])
            leaked = sorted(visible - names)
            if leaked:
                bad.append('libcudafilter.a holds %d visible symbols no '
                           'header declares: %s' % (len(leaked),
                                                    ', '.join(leaked[:12])))
            missing = sorted(names - visible)
            if missing:
                bad.append('declared but not in libcudafilter.a: %s' %
                           ', '.join(missing))
        if 'shared' in kinds:
            lib = D(os.path.join(libdir, 'libcudafilter.so'))
            ver = opts.get('version') or json.load(open(os.path.join(
                build, 'meson-info', 'intro-projectinfo.json')))['version']
            chain = [os.path.basename(lib), 'libcudafilter.so.0',
                     'libcudafilter.so.' + ver]
            for a, b in zip(chain, chain[1:]):
                p = os.path.join(os.path.dirname(lib), a)
                if not os.path.islink(p) or os.readlink(p) != b:
                    bad.append('%s is not a link to %s' % (a, b))
            real = os.path.join(os.path.dirname(lib), chain[-1])
            if os.path.isfile(real):
                if elf_dynamic(real)[2] != ['libcudafilter.so.0']:
                    bad.append('SONAME %s' % elf_dynamic(real)[2])
                out = run(['nm', '-D', '--defined-only', real]).stdout
                exported = set(ln.split()[-1] for ln in out.splitlines()
                               if len(ln.split()) == 3)
                exported -= {'_init', '_fini', '__bss_start', '_edata', '_end'}
                leaked = sorted(exported - names)
                if leaked:
                    bad.append('libcudafilter exports %d symbols no header '
                               'declares: %s' % (len(leaked),
                                                 ', '.join(leaked[:12])))
                missing = sorted(names - exported)
                if missing:
                    bad.append('declared but not exported (a link error): %s' %
                               ', '.join(missing))
            else:
                bad.append('no %s' % real[len(dest):])

        # programs and plugin: find the library where it was installed
        search = prefix not in ('/usr', '/')
        progs = sorted(glob.glob(D(os.path.join(bindir, '*'))))
        for f in progs + glob.glob(D(os.path.join(libdir, 'gstreamer-1.0',
                                                  '*.so'))):
            needed, runpath, _ = elf_dynamic(f)
            if 'libcudafilter.so.0' not in needed:
                continue
            if any(build in p for p in runpath):
                bad.append('%s: RUNPATH into the build tree %s' %
                           (f[len(dest):], runpath))
            if search and libdir not in runpath:
                bad.append('%s: no RUNPATH %s (prefix %s): it does not find '
                           'libcudafilter.so.0 (RUNPATH %s)' %
                           (f[len(dest):], libdir, prefix, runpath or 'none'))
        for f in progs:
            page = D(os.path.join(mandir, 'man1', os.path.basename(f) + '.1'))
            if not os.path.exists(page):
                bad.append('no manual page %s' % page[len(dest):])

        # the systemd user unit starts the installed daemon, and the
        # installed example config, copied where the unit reads it
        # (~/.config/cudafilterd.conf, the unit's comment), checks out as
        # it is: its kernel-file named ~/.config/kernels/... (relative to
        # the config file) and the unit did not start. The staged tree
        # stands for the prefix in the copy's paths.
        unitdir = D(os.path.join(prefix, 'lib', 'systemd', 'user'))
        for u in sorted(glob.glob(os.path.join(unitdir, '*.service'))):
            execs = re.findall(r'^ExecStart=(\S+)', open(u).read(), re.M)
            for e in execs:
                if os.path.dirname(e) != bindir or not os.path.isfile(D(e)):
                    bad.append('%s: ExecStart=%s is not an installed program '
                               '(bindir %s)' % (u[len(dest):], e, bindir))
            if not execs:
                bad.append('%s: no ExecStart=' % u[len(dest):])
        daemon = D(os.path.join(bindir, 'cudafilterd'))
        example = D(os.path.join(absd(opts['datadir']), 'cudafilter',
                                 'examples', 'cudafilterd.conf'))
        if os.path.isfile(daemon):
            home = os.path.join(tmp, 'home', '.config')
            os.makedirs(home)
            conf = os.path.join(home, 'cudafilterd.conf')
            text = open(example).read() if os.path.isfile(example) else ''
            with open(conf, 'w') as f:
                f.write(re.sub(r'^(kernel-file\s*=\s*)' + re.escape(
                    prefix.rstrip('/') + '/'),
                    lambda m: m.group(1) + D(prefix.rstrip('/')) + '/',
                    text, flags=re.M))
            r = run([daemon, '--check', '-c', conf],
                    env=dict(os.environ, LD_LIBRARY_PATH=D(libdir)))
            if not text:
                bad.append('no example config %s' % example[len(dest):])
            elif r.returncode and 'without PortAudio' in r.stdout:
                print('skipped: the example config (no PortAudio: %s)' %
                      r.stdout.strip())
            elif r.returncode:
                bad.append('the example config, copied to ~/.config/'
                           'cudafilterd.conf as the systemd unit reads it, '
                           'does not check out (exit %d):\n%s' %
                           (r.returncode, r.stdout))

        # the plugin: a module, exporting GStreamer's entry points and none
        # of the library's functions (default_library=static: it holds
        # them)
        for f in glob.glob(D(os.path.join(libdir, 'gstreamer-1.0', '*.so'))):
            out = run(['nm', '-D', '--defined-only', f]).stdout
            cf = sorted(ln.split()[-1] for ln in out.splitlines()
                        if ln.split() and ln.split()[-1].startswith('cf_'))
            if cf:
                bad.append('%s exports %s' % (f[len(dest):],
                                              ', '.join(cf[:8])))

        # applications of the installed library, as built
        if pc_env is None:
            print('skipped: the applications (no pkg-config)')
        else:
            for kind in kinds:
                err = consumer(cc, tmp, pc_env, kind == 'static', D(libdir),
                               D(prefix), opts.get('b_sanitize', 'none'))
                if err:
                    bad.append(err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for b in bad:
        print('FAIL:', b)
    if not bad:
        print('ok: %d headers, %d functions declared and exported' %
              (len(headers), len(names)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
