# nbtext: `make demo` trains and evaluates on the bundled corpus; `make test` runs the tests.
# Both set up everything they need (a .venv with the project and its test extras) by themselves.

PYTHON ?= python3
SHARED ?= ../shared
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA   := data
DEMO   := build/demo.model
ARCHIVES := $(wildcard $(SHARED)/corpora/*.tar.gz)
EXTRACTED := $(patsubst $(SHARED)/corpora/%.tar.gz,$(DATA)/%/.extracted,$(ARCHIVES))

.PHONY: help install demo format test test-fast bench compare accuracy profile corpora mutants fuzz clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's|$$(SHARED)|$(SHARED)|g' -e 's|$$(BIN)|$(BIN)|g' \
	  -e 's|FUZZ_SECONDS|FUZZ_SECONDS=$(FUZZ_SECONDS)|' | awk -F ':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: $(STAMP)  ## create .venv with nbtext and its test, dask and plot extras

# A regular (not editable) install: an editable one adds an import hook that costs every
# `nbtext` process about 8 ms at start-up. It is redone whenever the package changes.
$(STAMP): pyproject.toml $(wildcard nbtext/*.py nbtext/*/*.py)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check '.[test,dask,plot]'
	@touch $@

demo: install  ## train on corpora/mail/train, evaluate on corpora/mail/test
	@mkdir -p build
	$(BIN)/nbtext train -o $(DEMO) corpora/mail/train/spam corpora/mail/train/ham
	$(BIN)/nbtext eval -m $(DEMO) corpora/mail/test/spam corpora/mail/test/ham
	@echo 'free prize, click now to claim' | $(BIN)/nbtext predict -m $(DEMO)

format: install  ## format the code as `make test` checks it (ruff format), then the linter's fixes
	$(BIN)/ruff format --quiet nbtext tests bench fuzz
	$(BIN)/ruff check --quiet --fix nbtext tests bench fuzz

test: install corpora  ## the linter, the layer contract and the type checker, then the tests on every core (real corpora extracted first when $(SHARED) has them), the slowest listed at the end
	$(BIN)/ruff format --check --quiet nbtext tests bench fuzz
	$(BIN)/ruff check --quiet nbtext tests bench fuzz
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto --durations=15 --durations-min=5

test-fast: install  ## the tests that read no real corpus (pytest -m "not slow"): about half a minute
	$(BIN)/python -m pytest -q -n auto -m "not slow"

bench: install corpora  ## speed and memory against scikit-learn and the Python floor, a Dask cluster against -j 1 (minutes)
	$(BIN)/python bench/bench.py

compare: install corpora  ## the work tree against REV (a git revision; default main) on the rows a user feels, interleaved: filter (the general and the spam preset's model), learn, forget, train, predict
	$(BIN)/python bench/builds.py $(or $(REV),main)

accuracy: install corpora  ## train on each real corpus's train split, evaluate on its test split (the README's accuracy figures; docs/performance.md)
	$(BIN)/python bench/accuracy.py

profile: install corpora  ## where a 20news training's time goes, sampled by py-spy (the dev extra)
	$(BIN)/pip install --quiet --disable-pip-version-check '.[dev]'
	$(BIN)/python bench/profile.py

mutants: install  ## mutation testing of the scoring core (mutmut; the fast tests, not the real corpora; long)
	$(BIN)/pip install --quiet --disable-pip-version-check '.[dev]'
	@# from scratch: a kept mutants/ keeps its old map of which tests call which function,
	@# which goes stale when code moves between modules (its survivors were then false)
	rm -rf mutants
	SHARED=/nonexistent $(BIN)/mutmut run --max-children 2 || true
	$(BIN)/mutmut results

FUZZ_SECONDS ?= 300
fuzz: install  ## coverage-guided fuzzing (atheris) of the mail, table and model readers and whole documents, FUZZ_SECONDS each
	$(BIN)/pip install --quiet --disable-pip-version-check '.[dev]'
	@mkdir -p build/fuzz
	for target in mail table model documents; do \
	  $(BIN)/python fuzz/fuzz.py $$target -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz/$$target- || exit 1; \
	done

corpora: $(EXTRACTED)  ## extract $(SHARED)/corpora/*.tar.gz into data/ (git-ignored)
ifeq ($(ARCHIVES),)
	@echo "no $(SHARED)/corpora/*.tar.gz here: the tests that read a real corpus skip (listed at the end of the run)"
endif

$(DATA)/%/.extracted: $(SHARED)/corpora/%.tar.gz
	@mkdir -p $(DATA)
	tar -xzf $< -C $(DATA)
	@touch $@

clean:  ## remove build products (keeps .venv and data/)
	rm -rf build .pytest_cache .hypothesis nbtext.egg-info mutants
