"""A Spark job submitted to the standalone cluster by the tests, as docs/spark.md says (``spark-submit --archives``).

``pipeline_job.py SYSTEM URL SOURCE COPY SINK CHECKPOINT RESULT PHASE``: in phase ``batch`` it reads SOURCE
whole, writes what it read to RESULT (JSON), copies the rows to topic COPY, and runs the stream once;
in phase ``stream`` it only runs the stream again. The stream reads SOURCE from the earliest position into
parquet files under SINK with its checkpoint in CHECKPOINT, ``availableNow``: it stops once it has caught up.
Both phases also record, from an executor, which Python ran the tasks and whether the compiled speedups
were loaded there.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession

import sparkwire


def executor_facts(_: Any) -> list[dict[str, Any]]:
    """Runs in an executor's Python worker: where the project came from and whether it is compiled."""
    import kafkawire
    from kafkawire import delivery
    from kafkawire.protocol import records
    from pulsarwire.protocol import batch

    return [
        {
            "executable": sys.executable,
            "prefix": sys.prefix,
            "kafkawire": kafkawire.__file__,
            "kafka_speedups": getattr(records._speedups, "__file__", None),
            "pulsar_speedups": getattr(batch._speedups, "__file__", None),
            # The compiled record future is the one type without the cycle collector's flag (Py_TPFLAGS_HAVE_GC).
            "delivery_speedups": None
            if delivery.RecordFuture.__flags__ & (1 << 14)
            else getattr(sys.modules.get("kafkawire._delivery_speedups"), "__file__", None),
        }
    ]


def main() -> None:
    system, url, source, copy, sink, checkpoint, result, phase = sys.argv[1:9]
    spark = SparkSession.builder.appName(f"sparkwire-{system}-{phase}").getOrCreate()
    sparkwire.register(spark)
    fmt = f"{system}wire"
    facts = spark.sparkContext.parallelize([0, 1], 2).mapPartitions(executor_facts).collect()
    out: dict[str, Any] = {"executors": facts}
    if phase == "batch":
        rows = spark.read.format(fmt).option("url", url).option("subscribe", source).load()
        got = rows.select("value", "partition", "headers").collect()
        out["read"] = sorted(
            [bytes(r.value).decode(), r.partition, {k: bytes(v).decode() for k, v in (r.headers or {}).items()}]
            for r in got
        )
        out["read_partitions"] = rows.rdd.getNumPartitions()
        rows.select("value", "headers").write.format(fmt).mode("append").option("url", url).option("topic", copy).save()
    stream = (
        spark.readStream.format(fmt)
        .option("url", url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    out["stream_batches"] = query.lastProgress["batchId"] if query.lastProgress else None
    with open(result, "w", encoding="utf-8") as f:
        json.dump(out, f)
    spark.stop()


if __name__ == "__main__":
    main()
