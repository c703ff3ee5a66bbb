# The two commands a new user needs, from a fresh clone:
#   make demo   -- set up .venv and run the demo (digits as a bandit)
#   make test   -- set up .venv and run the test suite
#   make docs   -- build the documentation into docs/_build/html (warnings are errors)
.PHONY: demo test setup bench lint docs docs-clean

setup: .venv/.installed

.venv/.installed: pyproject.toml scripts/setup.sh
	bash scripts/setup.sh
	touch .venv/.installed

demo: setup
	.venv/bin/python -m skbandit demo

test: setup
	.venv/bin/python -m pytest -n 2 -q

lint: setup
	.venv/bin/ruff check skbandit tests benchmarks examples

bench: setup
	.venv/bin/python benchmarks/speed/linucb.py

.venv/.docs-installed: .venv/.installed pyproject.toml scripts/setup_docs.sh
	bash scripts/setup_docs.sh
	touch .venv/.docs-installed

# -W: warnings are errors; -n: every internal reference must resolve. The gallery runs
# its examples with SKBANDIT_DOCS_QUICK=1 (set in docs/conf.py): fewer rounds.
docs: setup .venv/.docs-installed
	.venv/bin/python -m sphinx -W --keep-going -n -b html docs docs/_build/html

docs-clean:
	rm -rf docs/_build docs/auto_examples docs/modules/generated docs/api.rst
