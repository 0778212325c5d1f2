# Everything a new machine needs is installed by these targets: a virtual environment with the
# package and its test tools, and the broker class paths resolved by Maven into ~/.m2 (cached).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# The event loop of the async tests: both (each async test on asyncio's loop and on uvloop), asyncio or uvloop.
TEST_LOOP ?= both

.PHONY: all venv brokers-classpath test unit lint proto demo bench bench-spark-cluster fuzz clean soak proof reference-pauses dist test-cluster docs spark-env sanitizers kerberos docker-engine images test-containers

all: test

# The kerberos extra (in dev) builds the gssapi package against MIT Kerberos's headers: installed first.
$(STAMP): pyproject.toml kafkawire/protocol/_records_speedups.c kafkawire/_delivery_speedups.c kafkawire/_partitioner_speedups.c pulsarwire/protocol/_batch_speedups.c common/_gc_speedups.c common/_enqueue_speedups.c | kerberos
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'  # dev brings the cli, spark and testing extras
	touch $(STAMP)

venv: $(STAMP)

# Resolve the class paths of Kafka, Pulsar and TubeMQ from Maven Central (cached in ~/.m2).
brokers-classpath: $(STAMP)
	$(PY) -m mqwire.testing fetch

# Regenerate the protobuf modules of pulsarwire and tubemqwire from the .proto files written here.
proto: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m grpc_tools.protoc -I pulsarwire/protocol --python_out=pulsarwire/protocol --mypy_out=pulsarwire/protocol pulsarwire/protocol/*.proto
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m grpc_tools.protoc -I tubemqwire/protocol --python_out=tubemqwire/protocol --mypy_out=tubemqwire/protocol tubemqwire/protocol/*.proto

# ruff, mypy strict, and the import contract of pyproject.toml's [tool.importlinter] (the layers call one way).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

unit: $(STAMP)
	$(PY) -m pytest -m "not integration" --loop=$(TEST_LOOP) $(PYTEST_ARGS)

# The guides and the API reference from the docstrings, into build/docs; any warning fails the build.
docs: $(STAMP)
	$(PY) -m sphinx -b html -q -W --keep-going docs build/docs

# The whole suite: lint, types, the import contract and the documentation, unit tests, then integration tests against real brokers
# started by the tests; every async test runs on asyncio's loop and again on uvloop (TEST_LOOP), in one session.
test: $(STAMP) brokers-classpath docs
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) -m pytest --loop=$(TEST_LOOP) --durations=40 $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: the suite is broken" >&2; exit 1; fi; exit $$rc

# Clusters (Kafka, Pulsar, TubeMQ) of the tests' own, with nodes killed under traffic: tests/cluster, run only here;
# and the Spark data sources on a Spark standalone cluster whose executors get the packed environment: tests/spark_cluster.
test-cluster: $(STAMP) brokers-classpath spark-env
	$(PY) -m pytest tests/cluster tests/spark_cluster -m "not reference_pause" -p no:cacheprovider --durations=20 $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no cluster tests: the suite is broken" >&2; exit 1; fi; exit $$rc

demo: $(STAMP) brokers-classpath
	$(PY) examples/demo.py

# The source distribution and the wheel in dist/, built as a user's `pip` would (isolated build), and their
# metadata checked. Install one with `pip install dist/mqwire-*.whl` or `pip install 'mqwire[cli] @ file://...'`.
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

# The environment Spark executors run the data sources in, packed into build/spark-env.tar.gz for
# `spark-submit --archives build/spark-env.tar.gz#env --conf spark.pyspark.python=./env/bin/python`: the wheel
# (with its compiled speedups) and pyarrow in a plain venv of the same Python (pyspark itself comes from Spark).
SPARK_ENV := build/spark-env
spark-env: $(STAMP)
	rm -rf $(SPARK_ENV) $(SPARK_ENV)-wheel $(SPARK_ENV).tar.gz
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir $(SPARK_ENV)-wheel .
	$(PY) -m venv $(SPARK_ENV)
	$(SPARK_ENV)/bin/python -m pip install --quiet $(SPARK_ENV)-wheel/mqwire-*.whl \
		"pyarrow==$$($(PY) -c 'import pyarrow; print(pyarrow.__version__)')"
	$(VENV)/bin/venv-pack --quiet -p $(SPARK_ENV) -o $(SPARK_ENV).tar.gz

clean:
	rm -rf $(VENV) dist build .pytest_cache .mypy_cache .ruff_cache

# Every client against its peers on the same brokers in one run, the Spark read, and what statistics and
# tracing cost the Kafka producer (not part of the tests).
bench: $(STAMP) brokers-classpath
	$(PY) benchmarks/suite.py $(BENCH_ARGS)
	$(PY) benchmarks/spark_kafka_read.py $(SPARK_BENCH_ARGS)
	$(PY) benchmarks/spark_kafka_write.py
	$(PY) benchmarks/spark_pulsar_read.py
	$(PY) benchmarks/spark_tubemq_read.py
	$(PY) benchmarks/overhead.py $(OVERHEAD_ARGS)

# The Spark sources on a standalone cluster of two workers (submitted with the packed environment): Kafka
# against Spark's own Kafka source, Pulsar and TubeMQ against their plain clients (brokers started for it);
# and the Kafka sink against Spark's own, at 500,000 and 2,000,000 rows in 4 tasks.
bench-spark-cluster: $(STAMP) brokers-classpath spark-env
	$(PY) benchmarks/spark_cluster_kafka_read.py
	$(PY) benchmarks/spark_cluster_kafka_write.py --records 500000,2000000
	$(PY) -m mqwire.testing --state-dir build/bench-brokers start pulsar tubemq
	$(PY) benchmarks/spark_cluster_source_read.py --system pulsar --state-dir build/bench-brokers; rc=$$?; \
	$(PY) benchmarks/spark_cluster_source_read.py --system tubemq --state-dir build/bench-brokers || rc=1; \
	$(PY) -m mqwire.testing --state-dir build/bench-brokers stop; exit $$rc

# Every decoder under hypothesis with many more cases than the test run uses (not part of `make test`); then the
# decoders' tests once more against the C extensions built with clang's AddressSanitizer and
# UndefinedBehaviorSanitizer (into build/sanitized, apart from the package's own builds). A sanitizer report
# aborts the run (-fno-sanitize-recover=all). The interpreter is not instrumented: the ASan runtime is preloaded,
# and leak detection is off (CPython keeps much of its memory until exit on purpose).
FUZZ_EXAMPLES ?= 100000
SANITIZE_EXAMPLES ?= 1000
SANITIZED := build/sanitized
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
SPEEDUPS := kafkawire/protocol/_records_speedups.c kafkawire/_delivery_speedups.c kafkawire/_partitioner_speedups.c pulsarwire/protocol/_batch_speedups.c common/_gc_speedups.c common/_enqueue_speedups.c
fuzz: $(STAMP) sanitizers
	MQWIRE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/fuzz -q -p no:cacheprovider --timeout=0 $(PYTEST_ARGS)
	rm -rf $(SANITIZED) && mkdir -p $(SANITIZED)
	include="$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"; \
	for source in $(SPEEDUPS); do \
		clang $(SANITIZE_FLAGS) -Wall -Wextra -Werror -shared -fPIC -I"$$include" \
			-o $(SANITIZED)/$$(basename $$source .c).so $$source || exit 1; \
	done
	LD_PRELOAD="$$(clang -print-file-name=libclang_rt.asan-$$(uname -m).so)" ASAN_OPTIONS=detect_leaks=0 \
		UBSAN_OPTIONS=print_stacktrace=1 MQWIRE_PURE_PYTHON= MQWIRE_FUZZ_EXAMPLES=$(SANITIZE_EXAMPLES) \
		$(PY) tests/fuzz/run_sanitized.py $(SANITIZED) -q -p no:cacheprovider --timeout=0 $(PYTEST_ARGS)

# clang and its sanitizer runtimes (Debian's packages), installed only when missing.
sanitizers:
	@if ! command -v clang >/dev/null || [ ! -f "$$(clang -print-file-name=libclang_rt.asan-$$(uname -m).so)" ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang libclang-rt-14-dev; \
	fi

# MIT Kerberos (Debian's packages), installed only when missing: the KDC and admin tools the GSSAPI tests start
# (mqwire.testing.kdc), and the headers and krb5-config the gssapi package builds with.
kerberos:
	@if [ ! -x /usr/sbin/krb5kdc ] || [ ! -x /usr/sbin/kadmin.local ] || [ ! -x /usr/sbin/kdb5_util ] || ! command -v krb5-config >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q krb5-kdc krb5-admin-server krb5-user libkrb5-dev; \
	fi

# The long checks README cites, too slow for every CI run (nightly-style): every decoder's fuzz test at
# FUZZ_EXAMPLES (100,000) cases and once more under ASan and UBSan, then the ten-minute soak per system. `make test`
# runs the same fuzz tests at 200 cases each.
proof: fuzz soak reference-pauses

# The reference clients' failover pauses (librdkafka, pulsar-client, TubeMQ's Java client) through the cluster
# tests' faults, which README's Guarantees compares with ours: measurements of the peers, not checks of mqwire.
reference-pauses: $(STAMP) brokers-classpath
	$(PY) -m pytest tests/cluster -m reference_pause -p no:cacheprovider -s $(PYTEST_ARGS)

# Ten minutes of load per system against bounded buffers; peak memory against the bounds (not part of `make test`).
SOAK_SECONDS ?= 600
soak: $(STAMP) brokers-classpath
	$(PY) tests/soak/soak.py --seconds $(SOAK_SECONDS)

# The runtime matrix (tests/matrix.py): CPython 3.12 and 3.13 from pyenv (a missing one fails), each in its own
# environment under build/matrix with the speedups built (a build that fell back to Python fails), unit tests and
# the contract suite; CPython 3.11 on the pure-Python fallback, the contract suite and one round trip per client.
# The brokers start once (build/matrix-brokers) and are stopped at the end, whatever happened.
.PHONY: test-matrix
test-matrix: $(STAMP) brokers-classpath
	$(PY) tests/matrix.py $(MATRIX_ARGS)

# The brokers in containers (mqwire.testing.containers), with images built here and no image registry.
# docker-engine: nothing when an engine answers; otherwise Debian's docker.io and debootstrap are installed where
# missing (apt-get, as root) and dockerd started in the background, its pid and log in $(DOCKER_RUN_DIR).
# `$(PY) -m mqwire.testing engine stop --run-dir $(DOCKER_RUN_DIR)` stops it (only a dockerd started there).
DOCKER_RUN_DIR := build/docker
docker-engine: $(STAMP)
	$(PY) -m mqwire.testing engine start --run-dir $(DOCKER_RUN_DIR)

# The images of Kafka 4.3 and 3.9, Pulsar, TubeMQ and the schema registry, from a debootstrap base and the
# launcher's jars; tagged by content, so an unchanged tree builds nothing.
images: $(STAMP) brokers-classpath docker-engine
	$(PY) -m mqwire.testing images build

# CI's run on containers: the runtime matrix (tests/matrix.py: the contract suite on CPython 3.12 and 3.13 and on
# the pure-Python path) against Kafka, Pulsar and TubeMQ in containers, then the examples, a user's tests
# (examples/testing) and the containers' own tests with --brokers=testcontainers, then a check that nothing
# labelled is left. The dockerd started for the run is stopped whatever failed (so the engine and the images are
# set up here rather than as prerequisites). `make test-matrix` runs the same matrix on local JVMs.
CONTAINER_TESTS := tests/integration/test_examples.py examples/testing tests/containers/test_provider.py
test-containers: $(STAMP) brokers-classpath
	$(PY) -m mqwire.testing engine start --run-dir $(DOCKER_RUN_DIR) || exit 1; \
	$(PY) -m mqwire.testing images build; rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		$(PY) tests/matrix.py --containers $(MATRIX_ARGS) || rc=1; \
		$(PY) -m pytest $(CONTAINER_TESTS) --brokers=testcontainers --loop=asyncio -p no:cacheprovider --durations=20 $(PYTEST_ARGS); \
		prc=$$?; if [ $$prc -eq 5 ]; then echo "pytest collected no container tests: the suite is broken" >&2; fi; \
		if [ $$prc -ne 0 ]; then rc=1; fi; \
	fi; \
	$(PY) -m pytest tests/containers/test_nothing_left.py -q -p no:cacheprovider || rc=1; \
	$(PY) -m mqwire.testing engine stop --run-dir $(DOCKER_RUN_DIR); exit $$rc
