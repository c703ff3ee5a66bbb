# The two commands a new user needs, from a fresh clone:
#   make demo   -- set up .venv and run the demo (digits as a bandit)
#   make test   -- set up .venv and run the test suite
.PHONY: demo test setup bench lint

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
	.venv/bin/python benchmarks/bench_linucb_speed.py
