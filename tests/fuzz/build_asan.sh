#!/usr/bin/env bash
# Build textcalls with an AddressSanitizer + UBSan build of the Cython extension and install it
# (not editable) into the active Python environment. The source tree is copied first, so its
# in-place extension (src/textcalls/_scan_c*.so) and generated C are never touched.
#
#   tests/fuzz/build_asan.sh [gcc|clang]     (default: gcc)
#
# gcc:   ASan/UBSan instrumentation only; the Cython code gives libFuzzer no coverage (only the
#        Python code instrumented by atheris does).
# clang: also -fsanitize=fuzzer-no-link, so the Cython code's edges and comparisons guide libFuzzer.
#
# Either way the extension is NOT linked against a sanitizer runtime: run.sh preloads atheris's
# asan_with_fuzzer.so (compiler-rt's ASan + UBSan runtime with libFuzzer in it). Preloading gcc's
# libasan.so instead would take the coverage callbacks away from atheris (it warns "Coverage
# symbols are being provided by a library other than libFuzzer" and the corpus never grows).
set -euo pipefail
compiler="${1:-gcc}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python}"

case "$compiler" in
  gcc)
    # CC carries the flags and LDSHARED is given without them: setuptools appends CFLAGS to the link
    # command, and gcc would then link its own libasan/libubsan into the extension.
    export CC="gcc -fsanitize=address,undefined -fno-omit-frame-pointer -g"
    export LDSHARED="gcc -shared"
    ;;
  clang)
    export CC="clang -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -g"
    export LDSHARED="clang -shared"
    ;;
  *) echo "usage: $0 [gcc|clang]" >&2; exit 2 ;;
esac
unset CFLAGS LDFLAGS CPPFLAGS TEXTCALLS_NO_EXTENSIONS

copy="$(mktemp -d "${TMPDIR:-/tmp}/textcalls-asan.XXXXXX")"
trap 'rm -rf "$copy"' EXIT
tar -C "$root" -c --exclude=.git --exclude=build --exclude=dist --exclude='*.egg-info' \
    --exclude='*.so' --exclude='ext/textcalls/*.c' --exclude=.hypothesis --exclude=.benchmarks \
    --exclude='.*venv*' --exclude=__pycache__ . | tar -C "$copy" -x
"$python" -m pip install --no-cache-dir --force-reinstall --no-deps "$copy"

for ext in _kernels_c _scan_c; do
so="$("$python" -c 'import pathlib, sys, textcalls; print(next(pathlib.Path(textcalls.__file__).parent.glob(sys.argv[1] + "*.so")))' "$ext" 2>/dev/null || true)"
# Importing the extension needs the runtime, so check the symbols rather than importing it.
if [ -z "$so" ] || ! nm -D "$so" | grep ' U __asan_report' >/dev/null; then
  echo "build_asan.sh: the installed textcalls.$ext is not an ASan build: ${so:-missing}" >&2
  exit 1
fi
echo "build_asan.sh: installed $so ($compiler, ASan + UBSan)"
done
