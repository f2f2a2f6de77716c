# Sourced by .ci/run. step NAME COMMAND...: run COMMAND, remember NAME in ``failed`` if it
# failed, and go on. pytest's exit status 5 (no test collected: an empty tier) is not a failure.
failed=()
step() {  # step NAME COMMAND...: run it, remember a failure, go on
  local rc=0
  "${@:2}" || rc=$?
  if [ "$rc" -eq 5 ] && [ "${3:-}" = -m ] && [ "${4:-}" = pytest ]; then
    echo "ci: $1 collected no tests (exit 5), not a failure"
    rc=0
  fi
  if [ "$rc" -ne 0 ]; then
    echo "ci: $1 failed (exit $rc)"
    failed+=("$1")
  fi
}
