#!/usr/bin/env bash
# Run the fuzz harnesses against the ASan build installed by build_asan.sh, for a bounded time.
#
#   tests/fuzz/run.sh [SECONDS] [HARNESS ...] [-- LIBFUZZER_FLAG ...]
#
# SECONDS (default 600) is shared evenly by the harnesses (default: scrubber sse). Output goes to
# $FUZZ_OUT (default /tmp/textcalls-fuzz): corpus-NAME/ (new inputs; the seeds in corpus/NAME/
# are only read), NAME.log, and NAME-crash-* / NAME-timeout-* / NAME-oom-* for any finding. Every
# harness runs even when one fails; the exit status is 1 if any found something.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python}"
out="${FUZZ_OUT:-/tmp/textcalls-fuzz}"

total=600
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then total="$1"; shift; fi
harnesses=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do harnesses+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#harnesses[@]} -eq 0 ] && harnesses=(scrubber sse)
each=$(( total / ${#harnesses[@]} ))

for ext in _kernels_c _scan_c; do
so="$("$python" -c 'import pathlib, sys, textcalls; print(next(pathlib.Path(textcalls.__file__).parent.glob(sys.argv[1] + "*.so")))' "$ext" 2>/dev/null || true)"
if [ -z "$so" ] || ! nm -D "$so" | grep ' U __asan_report' >/dev/null; then
  echo "run.sh: textcalls.$ext is not an ASan build (${so:-missing}); run tests/fuzz/build_asan.sh first" >&2
  exit 2
fi
done

# atheris's compiler-rt ASan + UBSan runtime with libFuzzer linked in: it must come first.
export LD_PRELOAD="$("$python" -c 'import atheris; print(atheris.path())')/asan_with_fuzzer.so"
# CPython leaks by design; abort (not exit) so that libFuzzer writes the input out.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
# Every Python object its own malloc block, so ASan sees reads past a str's buffer (not pymalloc's pools).
export PYTHONMALLOC=malloc

mkdir -p "$out"
status=0
for name in "${harnesses[@]}"; do
  mkdir -p "$out/corpus-$name"
  echo "== $name: ${each}s, log $out/$name.log"
  "$python" "$here/fuzz_$name.py" -max_total_time="$each" -max_len=4096 -timeout=60 -rss_limit_mb=4096 \
      -print_final_stats=1 -dict="$here/textcalls.dict" -artifact_prefix="$out/$name-" "$@" \
      "$out/corpus-$name" "$here/corpus/$name" >"$out/$name.log" 2>&1
  rc=$?
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::|Done [0-9]+ runs)|INFO: Using|Finding|ERROR|SUMMARY|Test unit written' \
      "$out/$name.log" | grep -v "^INFO: Instrumenting" | cut -c1-300
  if [ $rc -ne 0 ]; then
    echo "== $name: FAILED (exit $rc), see $out/$name.log"
    status=1
  fi
done
exit $status
