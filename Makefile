PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test docs bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, from the constraints file: the CPU build (see constraints.txt)
	$(BIN)/pip install -q -c constraints.txt torch
	$(BIN)/pip install -q -c constraints.txt -e '.[dense,report,dev,docs,ray,backends,documents,http]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/harness run configs/demo-bm25.yaml

test: install
	$(BIN)/python -m pytest

# The site, into site/; the config and command references are generated from the code as it builds.
docs: install
	$(BIN)/mkdocs build --strict

bench: install
	$(BIN)/pip install -q -c constraints.txt -e '.[bench]'
	$(BIN)/python bench/metrics_bench.py --files

clean:
	rm -rf $(VENV) .harness-cache reports/*/ site/
