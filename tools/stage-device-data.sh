#!/usr/bin/env bash
# Copy the dataset files a GPU batch needs from the local data directory into device-data/ (git-ignored),
# so the device tool can carry them (../shared does not travel).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="${RECUNLEARN_DATA:-../shared/data}"
for ds in ${DATASETS:-ml-1m adm}; do
  mkdir -p "device-data/$ds/cure4rec"
  cp "$SRC/$ds"/cure4rec/{ratings,train,test}.csv* "device-data/$ds/cure4rec/"
done
# POT (UltraRE's optimal transport) is not on the GPU machine: carry its wheel.
mkdir -p device-data/wheels
.venv/bin/pip download --no-deps --only-binary=:all: --python-version 3.11 -d device-data/wheels POT==0.9.7.post1 >/dev/null
du -sh device-data
