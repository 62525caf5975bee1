#!/usr/bin/env bash
# Here, before a call to a lent GPU machine (which receives the working tree and nothing else): stage into the
# git-ignored device-data/ what tools/device-compute.sh needs there.
#
#   tools/stage-device.sh MINUTES [ENTRY ...]
#
# - data/: the dataset files of the runs the device would start (python -m recunlearn compute --stage);
# - repo.git: this commit without its files (a blob-less clone), so that records made there name a clean commit;
# - wheels/: the pinned pandas and PyYAML (the plan file), and the optional packages the runs import (data/NEEDS), for the device's Python.
# Then call the device with carry ["device-data"] and the command it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:?usage: tools/stage-device.sh MINUTES [ENTRY ...]}; shift
DEVICE_PYTHON=${DEVICE_PYTHON:-3.12}
LIMIT_MIB=${LIMIT_MIB:-60}
if [ -n "$(git status --porcelain --untracked-files=all -- lib grids)" ]; then
  echo "lib/ or grids/ has uncommitted changes: commit first (a record names the commit that made it)" >&2; exit 1
fi
rm -rf device-data && mkdir -p device-data
PYTHONPATH=lib RECUNLEARN_OFFLINE=1 .venv/bin/python -m recunlearn compute --device cuda --gpu-minutes "$MINUTES" \
  ${1:+--only "$@"} --stage device-data/data
git clone -q --depth 1 --filter=blob:none --no-checkout --upload-pack="git -c uploadpack.allowFilter=true upload-pack" \
  "file://$PWD" device-data/clone
mv device-data/clone/.git device-data/repo.git && rm -rf device-data/clone
GIT_DIR=device-data/repo.git GIT_WORK_TREE=. git read-tree HEAD   # an index, so that `git status` works there
pin() { grep -i "^$1==" requirements.txt; }
for package in pandas PyYAML $(cat device-data/data/NEEDS); do  # PyYAML: the compute plan is YAML
  .venv/bin/pip download -q --no-deps --only-binary=:all: --python-version "$DEVICE_PYTHON" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d device-data/wheels "$(pin "$package")"
done
tree_mib=$(git ls-files -z | du -c --files0-from=- -m | tail -1 | cut -f1)
staged_mib=$(du -sm device-data | cut -f1)
echo "staged at $(git rev-parse --short HEAD): ${staged_mib} MiB in device-data/, ${tree_mib} MiB of working tree"
if [ $((tree_mib + staged_mib)) -gt "$LIMIT_MIB" ]; then
  echo "more than ${LIMIT_MIB} MiB would travel: name fewer plan entries" >&2; exit 1
fi
echo "device call: carry [\"device-data\"], command: bash tools/device-compute.sh $MINUTES $*"
