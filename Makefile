# kstate build entry points. JVM side via sbt (bin/sbt bootstraps it), Python side via .venv.
SBT ?= bin/sbt
PY ?= .venv/bin/python

VENV := .venv
VENV_STAMP := $(VENV)/.stamp
REQS := python/requirements-dev.txt

SCALA_BIN := 2.13
VERSION := $(shell sed -n 's/^[[:space:]]*version[[:space:]]*:=[[:space:]]*"\([^"]*\)".*/\1/p' build.sbt)
# A jar per Spark minor (build.sbt; README, "Which jar for which Spark"): 4.3 is the pinned one
# (`make jar`, `make test`), 4.2 the other (`make jar-spark42`, `make test-spark42`).
JAR_NAME := kstate-spark4.3_$(SCALA_BIN)-$(VERSION).jar
JAR := jvm/target/scala-$(SCALA_BIN)/$(JAR_NAME)
JAR42_NAME := kstate-spark4.2_$(SCALA_BIN)-$(VERSION).jar
JAR42 := jvm/target/spark-4.2/scala-$(SCALA_BIN)/$(JAR42_NAME)
PY_JARS := python/kstate/jars

# Spark 4.2's own venv: pyspark 4.2.x and the test tools (python/requirements-spark42.txt).
VENV42 := .venv-spark42
VENV42_STAMP := $(VENV42)/.stamp
REQS42 := python/requirements-spark42.txt
PY42 := $(VENV42)/bin/python

# Spark's Python workers (UDFs) must run the venv's interpreter, not the system python3.
export PYSPARK_PYTHON ?= $(abspath $(PY))

.PHONY: all venv venv-spark42 jar jar-spark42 kafka-classpath checkpoint-stores-classpath proto-python docs-errors format lint test test-fast test-spark42 demo demo-kafka bench clean

all: test

venv: $(VENV_STAMP)

# Reinstalls only when the requirements file changes. Works with an existing .venv
# (only creates one when there is no interpreter in it yet).
$(VENV_STAMP): $(REQS)
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check -q -r $(REQS)
	@touch $@

# build.sbt compiles against the jars of the venv's pyspark, so the venv comes first.
jar: venv
	$(SBT) package
	@test -f $(JAR) || { echo "expected jar not found: $(JAR)" >&2; exit 1; }
	mkdir -p $(PY_JARS)
	rm -f $(PY_JARS)/kstate_*.jar $(PY_JARS)/kstate-spark4.3_*.jar
	cp $(JAR) $(PY_JARS)/

venv-spark42: $(VENV42_STAMP)

$(VENV42_STAMP): $(REQS42)
	@test -x $(VENV42)/bin/python || python3 -m venv $(VENV42)
	$(VENV42)/bin/python -m pip install --disable-pip-version-check -q -r $(REQS42)
	@touch $@

# Compiles against Spark 4.2 from Maven Central; sbt loads the whole build, whose 4.3 project
# reads the pinned venv's pyspark jars, so that venv comes first here too.
jar-spark42: venv
	$(SBT) spark42/package
	@test -f $(JAR42) || { echo "expected jar not found: $(JAR42)" >&2; exit 1; }
	mkdir -p $(PY_JARS)
	rm -f $(PY_JARS)/kstate-spark4.2_*.jar
	cp $(JAR42) $(PY_JARS)/

# The Kafka broker's classpath and Spark's Kafka connector jars, fetched from Maven Central by sbt
# (build.sbt, kafkaTestClasspath) and listed for the Python Kafka tests and demo-kafka.
KAFKA_CP := jvm/target/kafka-test-classpath.json
kafka-classpath: $(KAFKA_CP)
$(KAFKA_CP): build.sbt | venv
	$(SBT) kafkaTestClasspath

# The HDFS minicluster's, the S3 server's and the S3A connector's jars, fetched from Maven Central
# by sbt (build.sbt, checkpointStoresClasspath) and listed for python/tests/checkpoint_stores.py.
CKPT_CP := jvm/target/checkpoint-stores-classpath.json
checkpoint-stores-classpath: $(CKPT_CP)
$(CKPT_CP): build.sbt | venv
	$(SBT) checkpointStoresClasspath

# protoc (from Maven Central, build.sbt) and kstate's Spark Connect protocol for Python: the
# generated module python/kstate/proto/connect_pb2.py is committed; regenerate it after changing
# jvm/src/main/protobuf/kstate/proto/connect.proto (test_connect_protocol.py checks they agree).
PROTOC_PATH := jvm/target/protoc-path
$(PROTOC_PATH): build.sbt | venv
	$(SBT) protocPath
# The error conditions table of docs/errors.md, from python/kstate/error_conditions.json (the one
# file of kstate's error conditions; test_docs.py checks the table is current).
docs-errors: venv
	$(PY) python/tests/error_docs.py

proto-python: $(PROTOC_PATH)
	$$(cat $(PROTOC_PATH)) -Ijvm/src/main/protobuf --python_out=python jvm/src/main/protobuf/kstate/proto/connect.proto

# pytest: two workers (pytest-xdist, one SparkSession each; a module stays on one worker), then
# the tests marked serial (a local-cluster; python/tests/conftest.py) alone.
PYTEST_RUN := PYTHONPATH=python $(PY) -m pytest -q --durations=25
PYTEST := $(PYTEST_RUN) python/tests
test: venv jar $(KAFKA_CP) $(CKPT_CP) $(PROTOC_PATH)
	$(SBT) test
	$(PYTEST) -n 2 --dist loadfile -m "not serial"
	$(PYTEST) -m serial

# Formatting (docs/contributing.md, "Formatting"): scalafmt (sbt-scalafmt, project/scalafmt.conf)
# and ruff (python/pyproject.toml); `make format` applies both, `make lint` checks (CI runs it).
RUFF := $(VENV)/bin/ruff
RUFF_CONF := --config python/pyproject.toml
format: venv
	$(SBT) scalafmtAll scalafmtSbt
	$(RUFF) check $(RUFF_CONF) --fix python bench
	$(RUFF) format $(RUFF_CONF) python bench
lint: venv
	$(SBT) scalafmtCheckAll
	$(RUFF) check $(RUFF_CONF) python bench
	$(RUFF) format $(RUFF_CONF) --check python bench

# The fast tier for the edit-test loop (docs/contributing.md, "Test tiers"): the Scala unit and
# property suites (build.sbt, testFast) and the Python tests that run no streaming query.
FAST_PY_TESTS := test_docs.py test_errors.py test_durations.py test_connect_protocol.py test_nexmark_model.py
test-fast: venv jar $(PROTOC_PATH)
	$(SBT) testFast
	$(PYTEST_RUN) -n 2 --dist loadfile $(addprefix python/tests/,$(FAST_PY_TESTS))

# Spark 4.2 (docs/contributing.md, "Spark minors and the shim rule"): the whole Scala suite (plus Spark's own
# StateStoreSuiteBase against kstate's provider, SparkStateStoreSuiteBaseSuite) and the Python
# example tests below, in .venv-spark42 (pyspark 4.2.x). The jar is the 4.2 one: kstate.jar_path()
# picks it for the venv's pyspark.
SPARK42_PY_TESTS := test_dedup_kip_examples.py test_window_agg.py test_suppress_time_limit.py \
	test_tables.py test_dedup_errors.py test_packaging.py test_upgrades.py test_repartition_mixed.py
test-spark42: venv venv-spark42 jar-spark42
	$(SBT) spark42/test
	PYTHONPATH=python PYSPARK_PYTHON=$(abspath $(PY42)) $(PY42) -m pytest -q --durations=10 \
	  -n 2 --dist loadfile $(addprefix python/tests/,$(SPARK42_PY_TESTS))

demo: venv jar
	PYTHONPATH=python $(PY) -m kstate.demo

# The Kafka pipeline of python/tests/test_kafka_end_to_end.py on a real broker (docs/kafka.md).
demo-kafka: venv jar $(KAFKA_CP)
	PYTHONPATH=python:python/tests $(PY) python/tests/kafka_demo.py

# All benchmarks run even when an earlier one reports a failure; the target fails if any did.
# Extra flags for all: make bench BENCH_ARGS=--quick. At the end bench/report.py renders every
# result under bench/results/ into docs/benchmarks.md, the one page with the figures.
BENCH_ARGS ?=
bench: venv jar checkpoint-stores-classpath
	PYTHONPATH=python $(PY) bench/run.py $(BENCH_ARGS); s1=$$?; \
	PYTHONPATH=python $(PY) bench/providers.py $(BENCH_ARGS); s2=$$?; \
	$(SBT) "Test/runMain org.apache.spark.sql.kstate.bench.StoreBench $(BENCH_ARGS)"; s3=$$?; \
	$(SBT) "Test/runMain org.apache.spark.sql.kstate.bench.BufferMemoryBench $(BENCH_ARGS)"; s4=$$?; \
	$(SBT) "Test/runMain org.apache.spark.sql.kstate.bench.CommitLatencyBench $(BENCH_ARGS)"; s8=$$?; \
	PYTHONPATH=python $(PY) bench/windows.py $(BENCH_ARGS); s5=$$?; \
	PYTHONPATH=python $(PY) bench/suppress.py $(BENCH_ARGS); s6=$$?; \
	PYTHONPATH=python $(PY) bench/order.py $(BENCH_ARGS); s7=$$?; \
	PYTHONPATH=python $(PY) bench/enrichment.py $(BENCH_ARGS); s9=$$?; \
	PYTHONPATH=python $(PY) bench/recovery.py $(BENCH_ARGS); s10=$$?; \
	PYTHONPATH=python $(PY) bench/recovery.py --store hdfs $(BENCH_ARGS); s12=$$?; \
	PYTHONPATH=python:python/tests $(PY) bench/stores.py $(BENCH_ARGS); s13=$$?; \
	PYTHONPATH=python $(PY) bench/floor.py $(BENCH_ARGS); s14=$$?; \
	PYTHONPATH=python $(PY) bench/floor.py --order-cost $(BENCH_ARGS); s17=$$?; \
	PYTHONPATH=python $(PY) bench/nexmark.py $(BENCH_ARGS); s15=$$?; \
	PYTHONPATH=python $(PY) bench/growth.py $(BENCH_ARGS); s16=$$?; \
	$(PY) bench/report.py; s11=$$?; \
	test $$s17 -eq 0 -a $$s16 -eq 0 -a $$s1 -eq 0 -a $$s2 -eq 0 -a $$s3 -eq 0 -a $$s4 -eq 0 -a $$s5 -eq 0 -a $$s6 -eq 0 -a $$s7 -eq 0 -a $$s8 -eq 0 -a $$s9 -eq 0 -a $$s10 -eq 0 -a $$s11 -eq 0 -a $$s12 -eq 0 -a $$s13 -eq 0 -a $$s14 -eq 0 -a $$s15 -eq 0

clean:
	rm -rf jvm/target target project/target project/project
	rm -f $(PY_JARS)/kstate_*.jar $(PY_JARS)/kstate-spark*.jar
	rm -rf spark-warehouse metastore_db derby.log .pytest_cache .hypothesis
	find python bench -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
