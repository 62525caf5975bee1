# Everything runs from the project's virtual environment (.venv), created on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export JUPYTER_PREFER_ENV_PATH := 1
# Smoke outputs are nbval's references: compute them and check them with the same thread count.
SMOKE_ENV := OMP_NUM_THREADS=1 RECUNLEARN_OFFLINE=1

.PHONY: env test test-unit test-notebooks test-book book smoke paper status compute bench clean

env: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps rbo==0.1.3
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip install -q -e '.[ray]'  # the optional Ray executor of `compute`, tested in CI
	touch $@

# The README's test command: unit tests, notebooks against their smoke outputs, and the book build.
test: env
	$(SMOKE_ENV) $(BIN)/pytest -q --nbval-lax --nbval-current-env tests/unit notebooks/ tests/book

test-unit: env
	RECUNLEARN_OFFLINE=1 $(BIN)/pytest -q tests/unit

test-notebooks: env
	$(SMOKE_ENV) $(BIN)/pytest -q --nbval-lax --nbval-current-env notebooks/

test-book: env
	$(BIN)/pytest -q tests/book

# Build the browsable report from committed results into _build/html (offline; executes nothing).
book: env status
	$(BIN)/jupyter-book build . -W -n --keep-going

status: env
	$(BIN)/python -m recunlearn status

# Re-execute notebooks: smoke outputs are nbval's references; paper outputs go into book/.
smoke: env
	$(SMOKE_ENV) $(BIN)/python -m recunlearn notebooks --profile smoke

paper: env
	$(BIN)/python -m recunlearn notebooks --profile paper

# Run the compute plan's pending runs in plan order at low priority (resumable; stop with Ctrl-C or SIGTERM).
# Options go in COMPUTE_ARGS, e.g. make compute COMPUTE_ARGS="--hours 8" or COMPUTE_ARGS="--dry-run".
compute: env
	$(BIN)/python -m recunlearn compute $(COMPUTE_ARGS)

bench: env
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_epoch_time.py
	$(BIN)/python benchmarks/bench_shard_training.py
	$(BIN)/python benchmarks/bench_rls.py --threads 1
	$(BIN)/python benchmarks/bench_threads.py --busy 1

clean:
	rm -rf _build
