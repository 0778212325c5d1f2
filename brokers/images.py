"""Broker images built here, from what the local launcher already runs: no image registry needed.

The base image is Debian (``debootstrap --variant=minbase``) with Debian's JRE, imported into the engine;
each broker image adds, on top of it, the very jars of the launcher's class path (resolved by Maven and
cached, :mod:`mqwire.testing.classpath`), so the versions are pinned in one place: ``brokers/maven``.
The brokers' configuration is not baked in: the provider writes it at start with the launcher's own plan
(:mod:`mqwire.testing.containers`), since ports are chosen then.

Every image is tagged with a hash of what went into it (Debian suite and packages, the jars' names and
sizes, the code that builds it), so a build on an unchanged tree finds its images and does nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqwire.testing import classpath
from mqwire.testing.errors import BrokerError

REPOSITORY = "mqwire-testing"
SUITE = "bookworm"
# The JRE the launcher's brokers run on (JDK 17); the server VM is all they need.
PACKAGES = ("openjdk-17-jre-headless",)
MIRROR = "http://deb.debian.org/debian"
IMAGE_NAMES = ("kafka", "kafka3", "pulsar", "tubemq", "registry")
# Each image's class path: the broker's own, except the two Kafka releases which have one each.
CLASSPATH_OF = {"kafka": "kafka", "kafka3": "kafka3", "pulsar": "pulsar", "tubemq": "tubemq", "registry": "registry"}
ROOT = "/opt/mqwire"
LABEL = "mqwire.testing.image"
DEBOOTSTRAP_TIMEOUT = 1800

Log = Callable[[str], None]


class ImageError(BrokerError):
    """An image could not be built, or is not there to run."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def mirror() -> str:
    """The Debian mirror debootstrap uses (``MQWIRE_DEBIAN_MIRROR``; it does not change the image's content)."""
    return os.environ.get("MQWIRE_DEBIAN_MIRROR") or MIRROR


def base_tag() -> str:
    """``mqwire-testing/base:<hash>`` of the suite, the packages and the code that builds it."""
    return f"{REPOSITORY}/base:{_digest(SUITE, PACKAGES, _code()['base'])}"


# ------------------------------------------------------------------------------------------ layout
@dataclass(frozen=True)
class Layout:
    """Where a broker's jars go in its image: ``files`` (host path, image path) and the class path there."""

    name: str
    files: tuple[tuple[str, str], ...]
    classpath: str

    def fingerprint(self) -> list[tuple[str, str, int]]:
        """Each file's image path, name and size: versions are in the names, a rebuilt jar changes its size."""
        return [(inside, Path(host).name, Path(host).stat().st_size) for host, inside in self.files]


def _entries(name: str) -> list[str]:
    entries = classpath.cached(CLASSPATH_OF[name])
    if entries is None:
        raise ImageError(
            f"the {name} class path is not resolved yet: run `python -m mqwire.testing fetch {CLASSPATH_OF[name]}` "
            "(or `python -m mqwire.testing images build`, which does it)"
        )
    return entries


def layout(name: str, entries: Sequence[str] | None = None) -> Layout:
    """The image layout of ``name``'s class path (the cached one unless ``entries`` is given).

    Jars are numbered so that the class path keeps Maven's order whatever their names. The schema
    registry is a runner jar that finds its libraries next to itself: its whole folder is copied.
    """
    found = list(entries) if entries is not None else _entries(name)
    home = f"{ROOT}/{name}"
    if name == "registry":
        (runner,) = found
        folder = Path(runner).parent
        files = tuple(
            (str(path), f"{home}/app/{path.relative_to(folder).as_posix()}")
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        )
        return Layout(name, files, f"{home}/app/{Path(runner).name}")
    files = tuple((entry, f"{home}/lib/{i:04d}-{Path(entry).name}") for i, entry in enumerate(found))
    return Layout(name, files, ":".join(inside for _, inside in files))


def image_tag(name: str, found: Layout | None = None) -> str:
    """``mqwire-testing/<name>:<hash>`` of the base, the jars and the code that adds them."""
    if name not in IMAGE_NAMES:
        raise ImageError(f"no image for {name!r}; choose from {', '.join(IMAGE_NAMES)}")
    found = found or layout(name)
    return f"{REPOSITORY}/{name}:{_digest(base_tag(), name, found.fingerprint(), _code()['broker'])}"


# ------------------------------------------------------------------------------------------ engine
def client() -> Any:
    """A Docker SDK client for an engine that answers, or :class:`ImageError` saying how to get one."""
    from mqwire.testing.engine import answers

    why = answers()
    if why is not None:
        raise ImageError(
            f"no Docker engine answers (DOCKER_HOST={os.environ.get('DOCKER_HOST', 'unset')}): {why}. "
            "Start one (as root on Debian: `make docker-engine`)"
        )
    import docker  # type: ignore[import-untyped]

    return docker.from_env(timeout=600)


def present(engine: Any, tag: str) -> bool:
    """True when the engine has the image ``tag``."""
    import docker

    try:
        engine.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


# ------------------------------------------------------------------------------------------ building
@contextlib.contextmanager
def _scratch(prefix: str) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("MQWIRE_IMAGE_SCRATCH")))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _build_base(engine: Any, tag: str, log: Log) -> None:
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if debootstrap is None:
        raise ImageError("debootstrap is not installed (Debian package debootstrap; `make docker-engine` installs it)")
    if os.geteuid() != 0:
        raise ImageError("debootstrap needs root to build the base image")
    with _scratch("mqwire-base-") as scratch:
        rootfs = scratch / "rootfs"
        argv = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(rootfs),
            mirror(),
        ]
        log(f"base: {' '.join(argv)}")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=DEBOOTSTRAP_TIMEOUT, check=False)
        if done.returncode != 0:
            raise ImageError(
                f"debootstrap failed (exit {done.returncode}) building {tag}:\n{(done.stdout + done.stderr)[-3000:]}"
            )
        # Package lists and caches are of no use in the image.
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / junk).glob("*"):
                if path.is_file():
                    path.unlink()
        archive = scratch / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for path in sorted(rootfs.iterdir()):
                tar.add(path, arcname=path.name)
        repository, _, version = tag.partition(":")
        log(f"base: importing {archive.stat().st_size // (1 << 20)} MiB as {tag}")
        engine.api.import_image(
            src=str(archive),
            repository=repository,
            tag=version,
            changes=[f"LABEL {LABEL}=base", "ENV LANG=C.UTF-8"],
        )


def _add_files(tar: tarfile.TarFile, files: Sequence[tuple[str, str]]) -> None:
    made: set[str] = set()
    for host, inside in files:
        parts = inside.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in made:
                info = tarfile.TarInfo(folder)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                made.add(folder)
        info = tar.gettarinfo(host, arcname="/".join(parts))
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode = 0o644
        with open(host, "rb") as data:
            tar.addfile(info, data)


def _build_broker(engine: Any, tag: str, base: str, found: Layout, log: Log) -> None:
    with _scratch(f"mqwire-image-{found.name}-") as scratch:
        archive = scratch / "files.tar"
        with tarfile.open(archive, "w") as tar:
            _add_files(tar, found.files)
            listing = (found.classpath + "\n").encode()
            info = tarfile.TarInfo(f"{ROOT.strip('/')}/{found.name}/classpath")
            info.size, info.mode = len(listing), 0o644
            tar.addfile(info, io.BytesIO(listing))
        log(f"{found.name}: {len(found.files)} files, {archive.stat().st_size // (1 << 20)} MiB onto {base}")
        # Files put into a stopped container, then committed: no build tool or Dockerfile needed.
        container = engine.containers.create(base, command=["true"], labels={LABEL: f"build-{found.name}"})
        try:
            with open(archive, "rb") as data:
                if not container.put_archive("/", data):
                    raise ImageError(f"the engine refused the files of {tag}")
            repository, _, version = tag.partition(":")
            container.commit(
                repository=repository,
                tag=version,
                changes=[f"LABEL {LABEL}={found.name}", f"WORKDIR {ROOT}/{found.name}"],
            )
        finally:
            container.remove(force=True)


def _failing(name: str, tag: str, step: Callable[[], None]) -> None:
    """Run one image's build; whatever the engine or a tool raises becomes an :class:`ImageError` naming it."""
    try:
        step()
    except ImageError:
        raise
    except Exception as err:  # the SDK's, requests' and OS errors alike
        raise ImageError(
            f"building the {name} image {tag} failed: {type(err).__name__}: {err}. Nothing was tagged; "
            f"`python -m mqwire.testing images build --only {name}` tries again once the cause is fixed"
            if name != "base"
            else f"building the base image {tag} failed: {type(err).__name__}: {err}"
        ) from err


@functools.cache
def _code() -> dict[str, str]:
    # Read once: a source file edited while this process runs must not change the tags it computes.
    return {
        "base": inspect.getsource(_build_base),
        "broker": inspect.getsource(_build_broker) + inspect.getsource(layout),
    }


def build(names: Sequence[str] = IMAGE_NAMES, log: Log = _stderr, engine: Any = None) -> dict[str, str]:
    """Build the images of ``names`` that the engine lacks (the base first); returns name -> tag."""
    unknown = [n for n in names if n not in IMAGE_NAMES]
    if unknown:
        raise ImageError(f"no image for {', '.join(unknown)}; choose from {', '.join(IMAGE_NAMES)}")
    engine = engine or client()
    base = base_tag()
    if present(engine, base):
        log(f"base: {base} is there")
    else:
        _failing("base", base, lambda: _build_base(engine, base, log))
    tags: dict[str, str] = {}
    for name in names:
        entries = classpath.cached(CLASSPATH_OF[name]) or classpath.resolve(CLASSPATH_OF[name])
        found = layout(name, entries)
        tag = image_tag(name, found)
        if present(engine, tag):
            log(f"{name}: {tag} is there")
        else:
            _failing(name, tag, functools.partial(_build_broker, engine, tag, base, found, log))
            log(f"{name}: built {tag}")
        tags[name] = tag
    return tags


_code()  # at import, with the source this process runs


__all__ = ["IMAGE_NAMES", "ImageError", "Layout", "base_tag", "build", "client", "image_tag", "layout", "present"]
