#!/usr/bin/env bash
# Here, after tools/device-compute.sh ran on a GPU machine: its new records into book/_results/records (a record
# already here is kept), then the audit. Commit them as usual; pages read a run's GPU record where it has no CPU one.
#
#   tools/unpack-device-records.sh FOLDER        (the folder holding records.tar.gz and log.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
FOLDER=${1:?usage: tools/unpack-device-records.sh FOLDER}
tail -n 3 "$FOLDER/log.txt"
tar -xzvf "$FOLDER/records.tar.gz" -C book/_results/records --skip-old-files
PYTHONPATH=lib RECUNLEARN_OFFLINE=1 .venv/bin/python -m recunlearn audit
