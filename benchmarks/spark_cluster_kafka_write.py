"""Rows per second writing a DataFrame to Kafka on a Spark standalone cluster (a master and two workers, one
core and 1 GiB each, started from the pyspark package): the ``kafkawire`` sink against Spark's own.

``spark_kafka_write.py`` is submitted to the cluster as docs/spark.md says (``--archives
build/spark-env.tar.gz#env``, run ``make spark-env`` first), with Spark's Kafka sink added by ``--packages``
(resolved from Maven Central or the local Ivy cache). It writes each size of ``--records`` in ``--partitions``
tasks with both sinks alternately, and checks every run's topic to hold exactly the rows written. The cluster
is stopped by pid at the end.

    python benchmarks/spark_cluster_kafka_write.py --url kafka://127.0.0.1:9092 --records 500000,2000000
"""

from __future__ import annotations

import argparse
import sys

from harness import local_broker
from spark_cluster import submit
from spark_kafka_read import SPARK_KAFKA_PACKAGE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", default="500000,2000000", help="rows, or rows,rows,... (each measured)")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--url", help="kafka://host:port of a running broker (default: start one)")
    args = parser.parse_args()
    with local_broker("kafka", args.url) as urls:
        script_args = ["--url", urls["kafka"], "--records", args.records, "--size", str(args.size)]
        script_args += ["--partitions", str(args.partitions), "--repeat", str(args.repeat)]
        return submit("spark_kafka_write.py", script_args, ["--packages", SPARK_KAFKA_PACKAGE])


if __name__ == "__main__":
    sys.exit(main())
