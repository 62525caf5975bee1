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
du -sh device-data
