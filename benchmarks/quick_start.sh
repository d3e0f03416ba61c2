#!/usr/bin/env bash
# The README's quick start timed from nothing: a fresh clone of this repository, a new virtual environment, no pip
# cache (--no-cache-dir) and a new per-user data folder, as one command, to the first answer.
#   bash benchmarks/quick_start.sh            # prints the answer, then rc, seconds and the load average
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
git clone -q "$repo" "$work/clone" && cd "$work/clone" || exit 1
export XDG_DATA_HOME="$work/data"
start=$(date +%s.%N)
python3 -m venv .venv && .venv/bin/pip install --no-cache-dir --no-compile -q -e . \
  && .venv/bin/rag ask "How many reaction templates does RxnFlow use?"
rc=$?
end=$(date +%s.%N)
echo "rc=$rc from nothing to the answer: $(echo "$end - $start" | bc) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$work"
