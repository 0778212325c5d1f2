"""Rows per second reading one Kafka topic on a Spark standalone cluster (a master and two workers, one core
and 1 GiB each, started from the pyspark package): the ``kafkawire`` source against Spark's own.

The topic is filled once with kafkawire; then ``spark_kafka_read.py`` is submitted to the cluster as README
says (``--archives build/spark-env.tar.gz#env``, run ``make spark-env`` first), with Spark's Kafka source
added by ``--packages`` (resolved from Maven Central or the local Ivy cache), and reads it with both
sources alternately. The cluster is stopped by pid at the end.

    python benchmarks/spark_cluster_kafka_read.py --url kafka://127.0.0.1:9092 --records 2000000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tarfile
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path

from harness import local_broker
from spark_kafka_read import SPARK_KAFKA_PACKAGE, fill

from mqwire.testing import spark_cluster

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE.parent / "build" / "spark-env.tar.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--url", help="kafka://host:port of a running broker (default: start one)")
    args = parser.parse_args()
    if not ARCHIVE.exists():
        raise SystemExit(f"{ARCHIVE} is missing: run make spark-env")
    with ExitStack() as stack:
        url = stack.enter_context(local_broker("kafka", args.url))["kafka"]
        topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
        asyncio.run(fill(url, topic, args.records, args.size, args.partitions))
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mqwire-spark-bench-")))
        (work / "env").mkdir()
        with tarfile.open(ARCHIVE) as packed:
            packed.extractall(work / "env", filter="tar")  # the driver's side, as README says
        cluster = spark_cluster.start(work / "state", workers=2, cores=1, memory="1g")
        stack.callback(spark_cluster.stop, work / "state")
        env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        argv = ["spark-submit", "--master", cluster.master_url, "--archives", f"{ARCHIVE}#env"]
        argv += ["--conf", "spark.pyspark.python=./env/bin/python", "--packages", SPARK_KAFKA_PACKAGE]
        argv += [str(HERE / "spark_kafka_read.py"), "--master", cluster.master_url, "--url", url, "--topic", topic]
        argv += ["--records", str(args.records), "--size", str(args.size), "--repeat", str(args.repeat)]
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
        print(done.stdout)
        if done.returncode != 0:
            print(done.stderr[-5000:], file=sys.stderr)
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
