"""Rows per second reading one Kafka topic on a Spark standalone cluster (a master and two workers, one core
and 1 GiB each, started from the pyspark package): the ``kafkawire`` source against Spark's own.

The topic is filled once with kafkawire; then ``spark_kafka_read.py`` is submitted to the cluster as docs/spark.md
says (``--archives build/spark-env.tar.gz#env``, run ``make spark-env`` first), with Spark's Kafka source
added by ``--packages`` (resolved from Maven Central or the local Ivy cache), and reads it with both
sources alternately. The cluster is stopped by pid at the end.

    python benchmarks/spark_cluster_kafka_read.py --url kafka://127.0.0.1:9092 --records 2000000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid

from harness import local_broker
from spark_cluster import submit
from spark_kafka_read import SPARK_KAFKA_PACKAGE, fill


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--url", help="kafka://host:port of a running broker (default: start one)")
    args = parser.parse_args()
    with local_broker("kafka", args.url) as urls:
        url = urls["kafka"]
        topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
        asyncio.run(fill(url, topic, args.records, args.size, args.partitions))
        script_args = ["--url", url, "--topic", topic, "--records", str(args.records), "--size", str(args.size)]
        script_args += ["--repeat", str(args.repeat)]
        return submit("spark_kafka_read.py", script_args, ["--packages", SPARK_KAFKA_PACKAGE])


if __name__ == "__main__":
    sys.exit(main())
