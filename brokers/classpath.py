"""Resolve each broker's class path with Maven once, then serve it from a cache.

The cache key is a hash of the pom, so editing a pom (a version bump) resolves again and an
unchanged pom never starts Maven. Every jar is checked before a cached class path is used: one
removed from the local Maven repository since is fetched again instead of failing in the JVM.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from mqwire.testing.paths import classpath_cache_dir, pom_path


class ClasspathError(RuntimeError):
    """Maven could not resolve a class path; the message carries Maven's output."""


def pom_key(name: str) -> str:
    return hashlib.sha256(pom_path(name).read_bytes()).hexdigest()[:16]


def _cache_file(name: str) -> Path:
    return classpath_cache_dir() / f"{name}-{pom_key(name)}.classpath"


def _lib_dir(name: str) -> Path:
    # Jars that a pom copies by itself (artifacts whose own pom cannot be resolved).
    return classpath_cache_dir() / f"{name}-{pom_key(name)}.lib"


def _split(text: str) -> list[str]:
    return [e for e in text.strip().split(os.pathsep) if e]


def missing(entries: Iterable[str]) -> list[str]:
    return [e for e in entries if not Path(e).is_file()]


def cached(name: str) -> list[str] | None:
    """The cached class path entries, or None when absent or when a jar has gone missing."""
    path = _cache_file(name)
    if not path.is_file():
        return None
    entries = _split(path.read_text(encoding="utf-8"))
    if not entries or missing(entries):
        return None
    return entries


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    # Two test sessions (or a test and the demo) may resolve at once.
    lock_path = classpath_cache_dir() / f"{name}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _maven() -> str:
    mvn = os.environ.get("MQWIRE_MVN") or shutil.which("mvn")
    if not mvn:
        raise ClasspathError("Maven (mvn) is not on PATH; install it or set MQWIRE_MVN")
    return mvn


def resolve(name: str) -> list[str]:
    """Run Maven for one pom and cache the result; returns the class path entries."""
    with _locked(name):
        found = cached(name)
        if found is not None:
            return found
        lib_dir = _lib_dir(name)
        shutil.rmtree(lib_dir, ignore_errors=True)
        # Maven runs in a scratch copy so nothing is written next to the installed package.
        with tempfile.TemporaryDirectory(prefix=f"mqwire-mvn-{name}-") as scratch:
            shutil.copy(pom_path(name), Path(scratch) / "pom.xml")
            out_file = Path(scratch) / "classpath.txt"
            cmd = [
                _maven(),
                "-B",
                "-q",
                "validate",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={out_file}",
                f"-Dmqwire.libdir={lib_dir}",
            ]
            proc = subprocess.run(
                cmd, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
            )
            if proc.returncode != 0 or not out_file.is_file():
                raise ClasspathError(
                    f"Maven failed to resolve the {name} class path (exit {proc.returncode}):\n"
                    f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
                )
            resolved = _split(out_file.read_text(encoding="utf-8"))
        copied = sorted(str(p) for p in lib_dir.glob("*.jar")) if lib_dir.is_dir() else []
        entries = copied + resolved
        target = _cache_file(name)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(os.pathsep.join(entries) + "\n", encoding="utf-8")
        tmp.replace(target)
        return entries


def classpath(name: str) -> str:
    """The class path string for ``name``, resolving it first if needed."""
    return os.pathsep.join(cached(name) or resolve(name))


def restore(name: str, path: str) -> None:
    """Make sure the jars of a class path stored in a broker's plan are still there.

    A restarted broker keeps the class path it was first started with (its data was written by
    that version); jars cleaned out of the local repository since are resolved again.
    """
    entries = _split(path)
    if not missing(entries):
        return
    resolve(name)
    gone = missing(entries)
    if gone:
        raise ClasspathError(
            f"{len(gone)} jar(s) of the {name} class path are gone and the current pom does not bring them back "
            f"(first: {gone[0]}); stop {name} and start it again"
        )
