PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast docs bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, from the constraints file: the CPU build (see constraints.txt)
	$(BIN)/pip install -q -c constraints.txt torch
	$(BIN)/pip install -q -c constraints.txt -e '.[dense,onnx,openvino,report,dev,docs,ray,backends,documents,http,frameworks]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/harness run configs/demo-bm25.yaml

# The whole suite, on two workers (a test file stays on one: its fixtures are made once); the slowest tests are
# listed at the end (--durations) so a slow one is seen when it lands.
test: install
	$(BIN)/python -m pytest -n 2 --dist loadfile --durations=15

# The edit loop (about two minutes): the architecture, the engine, hits, text, diagnostics and result checks, and
# one end-to-end demo run through the CLI with its numbers checked against pytrec_eval.
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow" --durations=5 tests/test_architecture.py tests/metrics tests/hits \
	    tests/text tests/diagnostics tests/cli/test_cli.py::test_demo_numbers_match_trec_eval_on_the_written_run

# The site, into site/; the config and command references are generated from the code as it builds.
docs: install
	$(BIN)/mkdocs build --strict

bench: install
	$(BIN)/pip install -q -c constraints.txt -e '.[bench]'
	$(BIN)/python bench/metrics_bench.py --files

clean:
	rm -rf $(VENV) .harness-cache reports/*/ site/
