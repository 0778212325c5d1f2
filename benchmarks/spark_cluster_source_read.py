"""The Pulsar or TubeMQ Spark read benchmark (``spark_pulsar_read.py``, ``spark_tubemq_read.py``: the source
against the plain client in one process, reading the same topic) on a Spark standalone cluster of two
workers, submitted as docs/spark.md says (run ``make spark-env`` first). The brokers must be running under
``--state-dir`` (``python -m mqwire.testing --state-dir DIR start``): the job's driver reaches them there.

    python benchmarks/spark_cluster_source_read.py --system pulsar --state-dir /tmp/brokers --records 1000000
"""

from __future__ import annotations

import argparse
import sys

from spark_cluster import submit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("pulsar", "tubemq"), required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    script_args = ["--state-dir", args.state_dir, "--records", str(args.records), "--repeat", str(args.repeat)]
    return submit(f"spark_{args.system}_read.py", script_args)


if __name__ == "__main__":
    sys.exit(main())
