"""Submitting a benchmark script to a Spark standalone cluster started for it (a master and two workers, one
core and 1 GiB each, from the pyspark package), as docs/spark.md says: the packed environment of ``make spark-env``
shipped with ``--archives``, the driver running from its unpacked copy. The cluster is stopped by pid at the
end."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from mqwire.testing import spark_cluster

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE.parent / "build" / "spark-env.tar.gz"


def submit(script: str, args: list[str], spark_args: list[str] | None = None) -> int:
    """Run ``benchmarks/SCRIPT --master CLUSTER ARGS`` with spark-submit on a new cluster; its output is printed
    and its exit status returned."""
    if not ARCHIVE.exists():
        raise SystemExit(f"{ARCHIVE} is missing: run make spark-env")
    with tempfile.TemporaryDirectory(prefix="mqwire-spark-bench-") as scratch:
        work = Path(scratch)
        (work / "env").mkdir()
        with tarfile.open(ARCHIVE) as packed:
            packed.extractall(work / "env", filter="tar")  # the driver's side, as docs/spark.md says
        cluster = spark_cluster.start(work / "state", workers=2, cores=1, memory="1g")
        try:
            env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
            env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
            argv = ["spark-submit", "--master", cluster.master_url, "--archives", f"{ARCHIVE}#env"]
            argv += ["--conf", "spark.pyspark.python=./env/bin/python", *(spark_args or [])]
            argv += [str(HERE / script), "--master", cluster.master_url, *args]
            done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
        finally:
            spark_cluster.stop(work / "state")
    print(done.stdout)
    if done.returncode != 0:
        print(done.stderr[-5000:], file=sys.stderr)
    return done.returncode
