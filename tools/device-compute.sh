#!/usr/bin/env bash
# On a lent GPU machine, after tools/stage-device.sh here: the plan's next pending runs on its GPU, none started
# after MINUTES minutes, the new records returned as one archive ($OUT/records.tar.gz, with $OUT/log.txt).
#
#   bash tools/device-compute.sh MINUTES [ENTRY ...]        (carry: ["device-data"])
#
# A run in progress when the hard limit (MINUTES + 2, then a kill a minute later) comes is lost, not written.
# Back here: tools/unpack-device-records.sh <the folder the files came back to>.
set -uo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:?usage: bash tools/device-compute.sh MINUTES [ENTRY ...]}; shift
OUT=${OUT:-$PWD/_build/device-out}; mkdir -p "$OUT"
export GIT_DIR="$PWD/device-data/repo.git" GIT_WORK_TREE="$PWD" GIT_NO_LAZY_FETCH=1 \
  GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
export RECUNLEARN_DATA="$PWD/device-data/data" RECUNLEARN_OFFLINE=1 RECUNLEARN_CACHE=/tmp/recunlearn-cache \
  PYTHONUNBUFFERED=1
if ls device-data/wheels/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    device-data/wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"
python3 - <<'PY' 2>&1 | tee "$OUT/log.txt" || exit 1
import pandas, torch
from recunlearn.provenance import git_commit, is_clean_commit
commit = git_commit()
print("commit", commit, "| torch", torch.__version__, "| pandas", pandas.__version__, "| GPU",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
if not (is_clean_commit(commit) and torch.cuda.is_available()):
    raise SystemExit("stopping: records made here would not name a clean commit, or there is no GPU")
PY
touch /tmp/device-compute-start
timeout --signal=TERM --kill-after=60 $((MINUTES * 60 + 120)) \
  python3 -m recunlearn compute --device cuda --gpu-minutes "$MINUTES" ${1:+--only "$@"} 2>&1 | tee -a "$OUT/log.txt"
(cd book/_results/records && find . -name '*.json' -newer /tmp/device-compute-start | sort > /tmp/device-records.txt
 tar -czf "$OUT/records.tar.gz" -T /tmp/device-records.txt)
echo "$(wc -l < /tmp/device-records.txt) new record(s) in records.tar.gz" | tee -a "$OUT/log.txt"
