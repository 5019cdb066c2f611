# Set-up is part of every target: the first run creates .venv and installs the package with its tests.
# EXTRAS adds optional parts: `make test EXTRAS=test,spark` also installs pyspark (what CI runs).
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= test
SAMPLE := data/rounds.csv --bets data/bets.csv
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: audit test sample bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

## Audit the bundled sample log and its bets into out/sample and show what was found (exit 1 = findings, expected here).
audit: $(STAMP)
	$(BIN)/baccarat-audit audit $(SAMPLE) --out out/sample; status=$$?; \
	  echo "baccarat-audit exited $$status (0 clean, 1 findings or quarantine, 2 could not run, 3 the tool failed)"; \
	  echo "The report: out/sample/report.html"; \
	  test $$status -le 1

## Run the whole test suite, on as many workers as cores (four at most: each may start a Spark JVM).
test: $(STAMP)
	$(BIN)/pytest -n auto --maxprocesses 4

## Deal the bundled sample again (same seed, same rounds): the committed files are removed first,
## since the generator replaces only files it wrote itself.
sample: $(STAMP)
	rm -f data/rounds.csv data/rounds.parquet data/bets.csv data/bets.parquet data/faults.csv
	$(BIN)/baccarat-audit generate --rounds 2000 --seed 2026 --fault-rate 0.01 --bets \
	  --profile standard --profile super-6 --profile ez-baccarat --profile tie-9 --out data

## Benchmark the audit against a bare read, a DuckDB query and a row-by-row loop on generated 1M- and
## 10M-round logs, and its peak memory on 30M (10 to 15 minutes on 2 cores once the logs are made; they are kept in bench/logs).
## PROBE names the folder of the probe (proto_stream.py) to time beside them; ../shared/probe when it is there.
PROBE ?= $(wildcard ../shared/probe)
bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[$(EXTRAS),bench]"
	$(BIN)/python bench/bench.py --rounds 1000000 10000000 $(if $(PROBE),--probe $(PROBE))

clean:
	rm -rf $(VENV) out
