PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, from the constraints file: the CPU build (see constraints.txt)
	$(BIN)/pip install -q -c constraints.txt torch
	$(BIN)/pip install -q -c constraints.txt -e '.[dense,report,dev,ray,backends,documents,http]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/harness run configs/demo-bm25.yaml

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/pip install -q -c constraints.txt -e '.[bench]'
	$(BIN)/python bench/metrics_bench.py --files

clean:
	rm -rf $(VENV) .harness-cache reports/*/
