"""Pick the JDK that runs a broker."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIN_MAJOR = 17
# Debian's and Temurin's usual install places; JDK 17 first because all three brokers run on it.
_WELL_KNOWN = (
    "/usr/lib/jvm/java-17-openjdk-amd64",
    "/usr/lib/jvm/java-17-openjdk-arm64",
    "/usr/lib/jvm/temurin-17-jdk-amd64",
    "/usr/lib/jvm/java-21-openjdk-amd64",
    "/usr/lib/jvm/temurin-21-jdk-amd64",
)


class JavaNotFound(RuntimeError):
    pass


@dataclass(frozen=True)
class Java:
    executable: str
    major: int

    def to_json(self) -> dict[str, object]:
        return {"executable": self.executable, "major": self.major}


def _major_from_release(home: Path) -> int | None:
    release = home / "release"
    if not release.is_file():
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(encoding="utf-8", errors="replace"), re.M)
    return int(match.group(1)) if match else None


def _major_from_binary(java: str) -> int | None:
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    match = re.search(r'version "(\d+)', proc.stderr)
    return int(match.group(1)) if match else None


def _probe(home_or_binary: str) -> Java | None:
    path = Path(home_or_binary)
    binary = path / "bin" / "java" if path.is_dir() else path
    if not binary.is_file() or not os.access(binary, os.X_OK):
        return None
    home = binary.resolve().parent.parent
    major = _major_from_release(home) or _major_from_binary(str(binary))
    return Java(str(binary), major) if major is not None else None


def find_java(broker: str | None = None) -> Java:
    """``MQWIRE_<BROKER>_JAVA_HOME``, then ``MQWIRE_JAVA_HOME``, ``JAVA_HOME``, well-known JDKs, PATH."""
    candidates: list[str] = []
    for var in ([f"MQWIRE_{broker.upper()}_JAVA_HOME"] if broker else []) + ["MQWIRE_JAVA_HOME"]:
        value = os.environ.get(var)
        if value:
            found = _probe(value)
            if found is None:
                raise JavaNotFound(f"{var}={value} does not hold a usable java")
            return found
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.environ["JAVA_HOME"])
    candidates.extend(_WELL_KNOWN)
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        found = _probe(candidate)
        if found is not None and found.major >= MIN_MAJOR:
            return found
    raise JavaNotFound(f"no JDK {MIN_MAJOR}+ found; set MQWIRE_JAVA_HOME")
