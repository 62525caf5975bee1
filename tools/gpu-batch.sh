#!/usr/bin/env bash
# The prepared paper-scale GPU batch: every grid in grids/cure4rec-gpu.json, records written to $OUT.
#
# On the lent GPU machine (torch present; no Jupyter, no ../shared):
#   1. here:   tools/stage-device-data.sh            # copies the needed datasets into device-data/ (git-ignored)
#   2. device: bash tools/gpu-batch.sh               # with carry: ["device-data"], $OUT set by the device tool
#   3. here:   cp -r <files_at>/records/* book/_results/records/ && make paper status
set -euo pipefail
cd "$(dirname "$0")/.."
export CUBLAS_WORKSPACE_CONFIG=:4096:8 RECUNLEARN_DATA="$PWD/device-data" RECUNLEARN_OFFLINE=1 PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-$PWD/_build/gpu-out}"
mkdir -p "$OUT/records"
python -c "import ot" 2>/dev/null || pip install --no-deps --no-index device-data/wheels/*.whl
python - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
PY
python -m recunlearn grid "${GRID:-grids/cure4rec-gpu.json}" --records "$OUT/records" 2>&1 | tee "$OUT/log.txt"
