# make run   : set up from nothing, land the sample data (all nine formats), dbt build, print a summary
# make test  : ruff, sqlfluff, pytest; pytest lands sample_data/ and the vendor examples in a temporary
#              warehouse and runs `dbt build` (models and every dbt test) on them. CI (.ci/run) runs it
#              beside make test-slow, then make test-kafka (CONTRIBUTING.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SPARK_JARS := jars/lib/.fetched
KAFKA_BROKER_JARS := jars/kafka-broker/lib/.fetched
HDFS_JARS := jars/hdfs/lib/.fetched
EXECUTOR_ENV := target/executor-env.tar.gz

export DBT_PROFILES_DIR := $(CURDIR)/profiles
export CDC_JARS_DIR ?= $(CURDIR)/jars/lib
export PYSPARK_PYTHON := $(CURDIR)/$(BIN)/python

.PHONY: help setup test-setup orchestrators jars kafka-broker hdfs executor-env sample-data land seeds build audit maintain run test test-unit test-python lint test-slow test-kafka test-orchestration test-cluster test-deploy test-monitoring prometheus test-history-property proto docs bench bench-cluster bench-decode bench-soak bench-changed bench-latency bench-many-tables bench-route bench-dts-history bench-reads bench-readme clean

help:
	@echo "make run          set up, land sample_data/, dbt build, print a summary per format"
	@echo "make build        a scheduled run (cdc-build): seeds when they changed, the change log, the typed tables that changed"
	@echo "make audit        dbt build --selector audit: every data test over whole tables"
	@echo "make maintain     cdc-maintain: landing retention, the run log's old batches, OPTIMIZE and VACUUM of every table"
	@echo "make test         lint + pytest + dbt build/test on the sample data (CI runs it beside make test-slow)"
	@echo "make test-setup   what CI's suites need (the venv, the Spark and Kafka broker jars): what CI installs first"
	@echo "make test-unit    the dbt unit tests alone: vendor rules (Canal, DTS regrouping, Alibaba halves and pairing, history) on hand-written rows"
	@echo "make test-slow    the suites of many dbt runs: batches, incremental runs, enabled formats, pairing, history property, typed tables, scaffold, cdc-land, docs"
	@echo "make test-kafka   cdc-ingest from a real Kafka broker (started on 127.0.0.1), then dbt build"
	@echo "make test-orchestration  installs the airflow and dagster extras; their scheduler and daemon run the scheduled run, audit, maintenance"
	@echo "make test-cluster dbt build on a shared deployment: a standalone master and two workers, the metastore on PostgreSQL, the warehouse on HDFS; two builds at once"
	@echo "make test-monitoring a Prometheus server scraping cdc-run and evaluating the alert rules over a healthy and a stalled runner"
	@echo "make test-deploy  test-orchestration, test-cluster and test-monitoring: before a change to scheduling, ingest, the lease, maintenance or the cluster profile is done"
	@echo "make executor-env the packed Python environment cluster executors run the UDFs with"
	@echo "make test-history-property  the history property test over 20 random change streams per format"
	@echo "make docs         dbt docs generate (target/index.html) on the warehouse"
	@echo "make bench        BENCH_EVENTS (1,000,000) events: decode vs native, full and 1% incremental build, memory"
	@echo "make bench-cluster the same through the cluster profile: local standalone master, two 1-core workers"
	@echo "make bench-decode the decode figures of make bench alone: every format beside its baseline"
	@echo "make bench-soak   200 scheduled runs of 1,000 events each, maintenance on its schedule: run cost, files, bytes"
	@echo "make bench-changed one process, 20 typed tables: a run with nothing new, a run where 1 of the 20 changed"
	@echo "make bench-latency a producer at 1,000 and 5,000 events/s into a real broker, the runner's loop: produce to visible"
	@echo "make bench-many-tables parse, selectors, cdc-build's choice and whole runs with 2 and with 400 typed tables (about an hour)"
	@echo "make bench-route   a run after one shard of a 1,024-shard route changed, beside one after one table of one changed"
	@echo "make bench-reads   an analyst's queries of a typed table beside a Delta table of its rows (READS_SIZE=quick: smaller)"
	@echo "make bench-readme  the tables of figures in bench/README.md, from bench/results/"
	@echo "make bench-dts-history a run of DTS regrouping after 80,000 and 2,400,000 landed Envelopes (about 12 minutes)"

$(BIN)/dbt: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# compat mode puts the project root on sys.path, where dbt finds the dbt_cdc_udfs plugin module
	$(BIN)/pip install -q -e '.[dev]' --config-settings editable_mode=compat
	touch $@

$(SPARK_JARS): jars/pom.xml
	cd jars && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime -DincludeGroupIds=io.delta,org.apache.spark,org.apache.kafka,org.apache.commons,org.postgresql
	touch $@

setup: $(BIN)/dbt $(SPARK_JARS)

jars: $(SPARK_JARS)

# A Kafka broker for make test-kafka only: the project itself reads Kafka through Spark's connector.
$(KAFKA_BROKER_JARS): jars/kafka-broker/pom.xml
	cd jars/kafka-broker && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime
	touch $@

kafka-broker: $(KAFKA_BROKER_JARS)

# HDFS (a NameNode and a DataNode in one JVM) for make test-cluster's shared storage only.
$(HDFS_JARS): jars/hdfs/pom.xml
	cd jars/hdfs && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime
	touch $@

hdfs: $(HDFS_JARS)

# Prometheus (Debian's package, unpacked here: nothing is installed on the system) for make test-monitoring.
PROMETHEUS := jars/prometheus/usr/bin/prometheus
$(PROMETHEUS):
	rm -rf jars/prometheus && mkdir -p jars/prometheus
	cd jars/prometheus && apt-get download -q prometheus && dpkg-deb -x prometheus_*.deb . && rm prometheus_*.deb

prometheus: $(PROMETHEUS)

# What cluster executors run the UDFs with (profile `cluster`, spark.archives): a virtual environment with
# python_udfs and the packages it imports, at the versions of .venv, packed by venv-pack. Executors unpack it
# and run its bin/python, a link to this machine's Python 3.11: they need the same interpreter at that path.
$(EXECUTOR_ENV): python_udfs/requirements.txt $(wildcard python_udfs/*.py python_udfs/proto/*.py) | setup
	rm -rf target/executor-venv $@
	$(PYTHON) -m venv target/executor-venv
	$(BIN)/pip freeze --exclude-editable > target/executor-constraints.txt
	target/executor-venv/bin/pip install -q -c target/executor-constraints.txt -r python_udfs/requirements.txt
	# setuptools' scratch folder would keep modules deleted since its last build
	rm -rf build && target/executor-venv/bin/pip install -q --no-deps .
	$(BIN)/venv-pack -q -p target/executor-venv -o $@

executor-env: $(EXECUTOR_ENV)

sample-data: setup
	$(BIN)/python sample_data/generate.py

land: setup
	$(BIN)/python sample_data/land_samples.py

# Seeds, and cdc_type_mappings built from them alone, load when they change (or into a new warehouse),
# not on every run; their tests are in the audit. The Airflow DAG does the same (cdc_lakehouse/seeds.py).
seeds: setup
	$(BIN)/python -m cdc_lakehouse.seeds

# A scheduled run (cdc-build): one batch (README, "The scheduled run"); the change log, then only the typed tables whose
# source tables changed (README, "The scheduled run"); the seeds first when they changed.
build: setup
	$(BIN)/cdc-build

# The daily audit: every data test over whole tables (reconciliation and history invariants included).
audit: setup
	$(BIN)/dbt build --selector audit

# Daily, between scheduled runs (README, "Operating it"); .venv/bin/cdc-maintain --help for its retention options.
maintain: setup
	$(BIN)/cdc-maintain

# The sample's Huawei DRS Avro records are written with this schema (a deployment sets its own).
run: export CDC_DRS_AVRO_SCHEMA ?= $(CURDIR)/sample_data/drs_record.avsc
run: setup land build
	$(BIN)/python sample_data/show_results.py

test: lint test-python

# The suites' JVM and Spark settings: ci.mk (CONTRIBUTING.md, "Test settings").
include ci.mk

# sqlfluff's dbt templater opens a Spark session for the models' introspective queries.
lint: setup
	$(BIN)/ruff check python_udfs cdc_lakehouse orchestration tests/python sample_data bench dbt_cdc_udfs.py
	$(BIN)/ruff format --check python_udfs cdc_lakehouse orchestration tests/python sample_data bench dbt_cdc_udfs.py
	# An empty warehouse: the dbt templater renders every model as a first, full build.
	CDC_WAREHOUSE=$(CURDIR)/target/lint-warehouse $(BIN)/sqlfluff lint models macros tests

# The dbt unit tests (models/**/_*__unit_tests.yml): the vendor rules on hand-written rows, in a warehouse of
# their own with nothing in it (no seeds, nothing landed), in under a minute. make test runs them too: its
# shared build is a whole `dbt build`, which runs every unit test before the model it tests.
test-unit: setup
	CDC_WAREHOUSE=$(CURDIR)/target/unit-warehouse $(BIN)/dbt test --select test_type:unit

test-python: setup
	$(BIN)/pytest -q --durations=15

# Suites of many dbt runs each (marker slow): minutes on their own, kept out of make test's 12 minutes;
# CI runs them beside make test. Two workers, a test file each at a time: a module's fixtures stay together.
test-slow: setup
	$(BIN)/pytest -q -m slow -n 2 --dist loadfile --durations=30

# The cluster profile on a shared deployment started on 127.0.0.1: a standalone master and two workers, the
# Hive metastore on PostgreSQL (the pgserver wheel's binaries), the warehouse on HDFS, a Kafka broker.
test-cluster: setup executor-env hdfs kafka-broker
	$(BIN)/pytest -q -m cluster --durations=10

ORCHESTRATORS := $(VENV)/.orchestrators

$(ORCHESTRATORS): pyproject.toml | setup
	$(BIN)/pip install -q -e '.[dev,airflow,dagster]' --config-settings editable_mode=compat
	touch $@

orchestrators: $(ORCHESTRATORS)

# What the data path's suites need (make test, test-slow, test-kafka), for .ci/run to install before it
# runs them side by side.
test-setup: setup kafka-broker

# The real-scheduler and shared-deployment suites: run them before a change to scheduling, ingest, the
# lease, maintenance or the cluster profile is called done (CONTRIBUTING.md). CI does not.
test-deploy: test-orchestration test-cluster test-monitoring

# A Prometheus server on 127.0.0.1 scraping cdc-run beside a Kafka broker, evaluating the project's alert rules
# (monitoring/prometheus/): their promtool unit tests, then a healthy runner (no alert) and a stalled one.
test-monitoring: setup kafka-broker prometheus
	$(BIN)/pytest -q -m monitoring --durations=10

# Airflow's scheduler (LocalExecutor) and Dagster's daemon, started on 127.0.0.1, running their schedules
# against a real Kafka broker, with their extras.
test-orchestration: setup kafka-broker orchestrators
	$(BIN)/pytest -q -m orchestration --durations=10

# cdc-ingest against a real single-node Kafka broker (KRaft) started from jars/kafka-broker on 127.0.0.1.
test-kafka: setup kafka-broker
	$(BIN)/pytest -q -m kafka --durations=10

# make test-slow draws one change stream per format (4 formats, in one warehouse); this draws 20 per format.
test-history-property: setup
	HISTORY_EXAMPLES=20 $(BIN)/pytest -q -m slow tests/python/test_history_property.py

# The DTS schema is a copy of ../shared/formats/tencent_dts_subscribe.proto; its module is committed.
proto: setup
	cd python_udfs/proto && ../../$(BIN)/python -m grpc_tools.protoc -I. --python_out=. tencent_dts_subscribe.proto

# The docs site of the project, with the catalog of the warehouse (build it first).
docs: setup
	$(BIN)/dbt docs generate

bench: setup
	$(BIN)/python bench/run.py

bench-cluster: setup executor-env
	$(BIN)/python bench/cluster.py

bench-decode: setup
	$(BIN)/python bench/run.py --decode-only

bench-changed: setup
	$(BIN)/python bench/changed.py

# The tables of bench/README.md from bench/results/ (every benchmark writes them when it records).
bench-readme: setup
	$(BIN)/python bench/readme_tables.py

# READS_SIZE=quick: 100,000 keys in place of 1,000,000 (a few minutes).
bench-reads: setup
	$(BIN)/python bench/reads.py --size $(or $(READS_SIZE),default)

# LATENCY_SECONDS (600) per configuration: four of them, each followed by the runs that drain what it produced.
bench-latency: setup kafka-broker
	$(BIN)/python bench/latency.py

bench-many-tables: setup
	$(BIN)/python bench/many_tables.py

bench-route: setup
	$(BIN)/python bench/route.py

bench-dts-history: setup
	$(BIN)/python bench/dts_history.py

# A few hours on 2 cores; SOAK_RUNS, SOAK_EVENTS and SOAK_MAINTAIN_EVERY to change it.
bench-soak: setup
	$(BIN)/python bench/soak.py

clean:
	rm -rf warehouse target logs
