"""A throw-away MIT Kerberos KDC on loopback for GSSAPI tests: its realm, database, keytabs and
configuration live in one folder made for the run, and ``krb5kdc`` (Debian's ``krb5-kdc``) runs in the
foreground, stopped by its pid. Nothing outside the folder is read or written: ``KRB5_CONFIG`` and
``KRB5_KDC_PROFILE`` point the tools at it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mqwire.testing.errors import BrokerStartError
from mqwire.testing.net import LOOPBACK, free_port
from mqwire.testing.procs import POLL_SECONDS, ProcSpec, kill, spawn, stop, tail, wait_until

REALM = "MQWIRE.TEST"
# The tools are in /usr/sbin, which an unprivileged PATH may lack.
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
PACKAGES = "krb5-kdc krb5-admin-server krb5-user"


def find_tool(name: str) -> str | None:
    """The path of a Kerberos tool (``krb5kdc``, ``kadmin.local``, ``kdb5_util``), or None."""
    found = shutil.which(name)
    if found:
        return found
    for folder in SBIN:
        candidate = Path(folder) / name
        if candidate.is_file():
            return str(candidate)
    return None


def available() -> bool:
    """Whether the KDC's tools are installed."""
    return all(find_tool(tool) for tool in ("krb5kdc", "kadmin.local", "kdb5_util"))


def _krb5_conf(port: int) -> str:
    # No DNS and no reverse lookups: a service principal is named after the host exactly as written.
    # TCP only (udp_preference_limit 1), so that a stopped KDC is a refused connection, quick to see.
    return (
        "[libdefaults]\n"
        f"  default_realm = {REALM}\n"
        "  dns_lookup_kdc = false\n"
        "  dns_lookup_realm = false\n"
        "  dns_canonicalize_hostname = false\n"
        "  rdns = false\n"
        "  udp_preference_limit = 1\n"
        "  ticket_lifetime = 1h\n"
        "  forwardable = false\n"
        "[realms]\n"
        f"  {REALM} = {{\n    kdc = {LOOPBACK}:{port}\n  }}\n"
        "[domain_realm]\n"
        f"  localhost = {REALM}\n"
    )


def _kdc_conf(folder: Path, port: int) -> str:
    return (
        "[kdcdefaults]\n"
        f"  kdc_listen = {LOOPBACK}:{port}\n"
        f"  kdc_tcp_listen = {LOOPBACK}:{port}\n"
        "[realms]\n"
        f"  {REALM} = {{\n"
        f"    database_name = {folder / 'principal'}\n"
        f"    key_stash_file = {folder / 'stash'}\n"
        f"    acl_file = {folder / 'kadm5.acl'}\n"
        f"    kdc_listen = {LOOPBACK}:{port}\n"
        f"    kdc_tcp_listen = {LOOPBACK}:{port}\n"
        "    max_life = 1h\n"
        "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
        "  }\n"
        "[logging]\n"
        f"  kdc = FILE:{folder / 'kdc.log'}\n"
    )


@dataclass
class Kdc:
    """A running KDC: ``krb5_conf`` is the client configuration (``KRB5_CONFIG``, and the JVM's
    ``java.security.krb5.conf``) that finds it."""

    folder: Path
    port: int
    pid: int = -1
    spec: ProcSpec | None = field(default=None, repr=False)

    @property
    def realm(self) -> str:
        return REALM

    @property
    def krb5_conf(self) -> Path:
        return self.folder / "krb5.conf"

    def env(self) -> dict[str, str]:
        """The environment of the Kerberos tools run against this KDC."""
        return {
            **os.environ,
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.folder / "kdc.conf"),
        }

    def _admin(self, query: str) -> None:
        tool = find_tool("kadmin.local")
        assert tool is not None
        done = subprocess.run(
            [tool, "-r", REALM, "-q", query], env=self.env(), capture_output=True, text=True, timeout=60, check=False
        )
        # kadmin.local exits 0 even when the query fails; its complaints go to stderr.
        if done.returncode != 0 or "error" in done.stderr.lower() or "failed" in done.stderr.lower():
            raise BrokerStartError(f"kadmin.local {query!r} failed: {done.stderr.strip() or done.stdout.strip()}")

    def add_principal(self, principal: str, keytab: Path | None = None) -> Path:
        """Make ``principal`` (``name`` or ``service/host``, in this realm) with a random key and write its
        keys to ``keytab`` (default: a file named after it in the folder); returns the keytab."""
        keytab = keytab or self.folder / (principal.replace("/", "_") + ".keytab")
        self._admin(f"addprinc -randkey {principal}@{REALM}")
        self.write_keytab(principal, keytab)
        return keytab

    def write_keytab(self, principal: str, keytab: Path) -> Path:
        """Write ``principal``'s keys to ``keytab``; this makes new keys (a new kvno), so any keytab
        written before for the principal no longer works."""
        self._admin(f"ktadd -k {keytab} {principal}@{REALM}")
        return keytab

    def kinit(self, principal: str, keytab: Path, cache: Path, lifetime: str = "1h") -> None:
        """Log ``principal`` in from ``keytab`` into the credential cache file ``cache`` for ``lifetime``
        (kinit's notation: ``"1s"``, ``"1h"``), as a user's ``kinit`` would."""
        tool = find_tool("kinit")
        if tool is None:
            raise BrokerStartError(f"no kinit here: apt-get install {PACKAGES}")
        env = {**self.env(), "KRB5CCNAME": f"FILE:{cache}"}
        done = subprocess.run(
            [tool, "-l", lifetime, "-k", "-t", str(keytab), f"{principal}@{REALM}"],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        if done.returncode != 0:
            raise BrokerStartError(f"kinit {principal} failed: {done.stderr.strip()}")

    def start(self, timeout: float = 30.0) -> None:
        """Start ``krb5kdc`` again on the same port and database (after ``stop``)."""
        tool = find_tool("krb5kdc")
        assert tool is not None
        marker = f"-P{self.folder / 'kdc.pid'}"
        self.spec = ProcSpec(
            "kdc", (tool, "-n", "-r", REALM, marker), str(self.folder), str(self.folder / "kdc.stdout.log"),
            str(self.folder / "kdc.log"), marker,
        )
        saved = {name: os.environ.get(name) for name in ("KRB5_CONFIG", "KRB5_KDC_PROFILE")}
        os.environ.update({k: v for k, v in self.env().items() if k in saved})
        try:
            self.pid = spawn(self.spec, owned=True)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        wait_until(f"krb5kdc on {LOOPBACK}:{self.port}", self._answers, timeout, [(self.pid, self.spec)])

    def _answers(self) -> bool | None:
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=POLL_SECONDS):
                return True
        except OSError:
            return None

    def stop(self) -> None:
        """Stop ``krb5kdc`` (its folder stays, for ``start`` or a look at ``kdc.log``)."""
        if self.spec is not None and self.pid > 0:
            stop(self.pid, self.spec.marker, timeout=10.0)
            kill(self.pid, self.spec.marker)
            self.pid = -1

    def log_tail(self) -> str:
        return tail(self.folder / "kdc.log")


def start_kdc(folder: Path, timeout: float = 30.0) -> Kdc:
    """A new realm in ``folder`` (made if missing) and its KDC started on a free loopback port."""
    if not available():
        raise BrokerStartError(f"no MIT Kerberos KDC here: apt-get install {PACKAGES}")
    folder.mkdir(parents=True, exist_ok=True)
    kdc = Kdc(folder, free_port())
    kdc.krb5_conf.write_text(_krb5_conf(kdc.port), encoding="utf-8")
    (folder / "kdc.conf").write_text(_kdc_conf(folder, kdc.port), encoding="utf-8")
    (folder / "kadm5.acl").write_text("", encoding="utf-8")
    util = find_tool("kdb5_util")
    assert util is not None
    made = subprocess.run(
        [util, "create", "-s", "-r", REALM, "-P", secrets.token_hex(16)],
        env=kdc.env(), capture_output=True, text=True, timeout=60, check=False,
    )
    if made.returncode != 0:
        raise BrokerStartError(f"kdb5_util create failed: {made.stderr.strip()}")
    kdc.start(timeout)
    return kdc


def kafka_gssapi_config(kdc: Kdc, keytab: Path, principal: str = "kafka/localhost") -> tuple[dict[str, str], list[str]]:
    """The server.properties and JVM flags that add GSSAPI, as ``principal`` with ``keytab``, to a
    launched Kafka's SASL_PLAINTEXT and SASL_SSL listeners (their other mechanisms stay)."""
    login = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true"
        f' keyTab="{keytab}" principal="{principal}@{kdc.realm}";'
    )
    properties = {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER,GSSAPI",
        "sasl.kerberos.service.name": principal.split("/", 1)[0],
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": login,
        "listener.name.sasl_ssl.gssapi.sasl.jaas.config": login,
    }
    return properties, [f"-Djava.security.krb5.conf={kdc.krb5_conf}"]
