# Sourced by build.sh and test.sh. side_by_side CMD...: runs each command (a bash line) at once,
# each one's output held in a file and printed whole, in order, as it ends; fails, naming the
# command, if any fails. On two cores, a single-threaded run or a link beside another build keeps
# both cores busy where one after the other leaves one idle.
side_by_side() {
  local dir pids=() status=0 index
  dir=$(mktemp -d)
  index=0
  for command in "$@"; do
    bash -c "set -euo pipefail; $command" >"$dir/$index" 2>&1 &
    pids+=($!)
    index=$((index + 1))
  done
  local commands=("$@")
  for index in "${!pids[@]}"; do
    local ended=0
    wait "${pids[$index]}" || ended=$?
    cat "$dir/$index"
    if [ "$ended" != 0 ]; then
      echo "failed (exit status $ended): ${commands[$index]}" >&2
      status=$ended
    fi
  done
  rm -rf "$dir"
  return "$status"
}
