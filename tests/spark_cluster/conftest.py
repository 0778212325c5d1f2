"""The Spark cluster tests run only when named (``make test-cluster`` or ``pytest tests/spark_cluster``): they
start a Spark standalone cluster (a master and two workers) and submit jobs to it, which takes minutes."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqwire.testing import spark_cluster
from tests.named_only import collected_only_when_named

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ENV_ARCHIVE = ROOT / "build" / "spark-env.tar.gz"


pytest_ignore_collect = collected_only_when_named(HERE)


@pytest.fixture(scope="session")
def env_archive() -> Path:
    """The packed executor environment of ``make spark-env`` (built here when missing)."""
    if not ENV_ARCHIVE.exists():
        subprocess.run(["make", "spark-env"], cwd=ROOT, check=True)
    return ENV_ARCHIVE


@pytest.fixture(scope="session")
def driver_dir(env_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where jobs are submitted from, as docs/spark.md says: the archive unpacked as ``env``, for the driver's
    side."""
    where = tmp_path_factory.mktemp("driver")
    (where / "env").mkdir()
    subprocess.run(["tar", "-xzf", str(env_archive), "-C", str(where / "env")], check=True)
    return where


@pytest.fixture(scope="session")
def cluster() -> Iterator[spark_cluster.SparkCluster]:
    """A master and two workers (one core, 1 GiB each) of this test run, stopped by pid at the end."""
    with tempfile.TemporaryDirectory(prefix="mqwire-spark-state-") as state:
        started = spark_cluster.start(Path(state), workers=2, cores=1, memory="1g")
        try:
            yield started
        finally:
            spark_cluster.stop(Path(state))


def submit(
    cluster: spark_cluster.SparkCluster, driver: Path, archive: Path, job: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``spark-submit`` as docs/spark.md gives it, from ``driver`` (which holds the unpacked ``env``): the packed
    environment runs the job's Python on the driver and on the executors. No other Python path is passed on."""
    drop = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # spark-submit is the installed pyspark's; it finds its Spark home through the `python3` on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = [
        "spark-submit",
        "--master",
        cluster.master_url,
        "--archives",
        f"{archive}#env",
        "--conf",
        "spark.pyspark.python=./env/bin/python",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        str(job),
        *args,
    ]
    return subprocess.run(argv, cwd=driver, env=env, capture_output=True, text=True, timeout=600)
