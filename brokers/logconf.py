"""log4j 2 configuration: every broker logs to one file in its work folder."""

from __future__ import annotations

from pathlib import Path

_TEMPLATE = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %-5p [%t] %c{{1}}: %m%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
{extra}"""


def write_log4j2(path: Path, log_file: Path, level: str = "INFO", quiet: tuple[str, ...] = ()) -> Path:
    """Write a properties-format log4j 2 config; ``quiet`` loggers are cut to WARN."""
    extra = "".join(
        f"logger.q{i}.name = {name}\nlogger.q{i}.level = WARN\n" for i, name in enumerate(quiet)
    )
    path.write_text(_TEMPLATE.format(log_file=log_file, level=level, extra=extra), encoding="utf-8")
    return path


def log4j2_flags(config: Path) -> list[str]:
    # Both property spellings: log4j 2 reads either, and some brokers look up the older one.
    return [f"-Dlog4j2.configurationFile={config}", f"-Dlog4j.configurationFile={config}"]
