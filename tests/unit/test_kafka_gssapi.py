"""SASL GSSAPI's token exchange and RFC 4752 security-layer step, over a fake security context, and the
connection's rounds of SaslAuthenticate for a mechanism that answers more than once."""

from __future__ import annotations

import asyncio
import builtins
import struct
import sys
from dataclasses import dataclass
from typing import Any

import pytest

import kafkawire
from kafkawire.sasl import SaslSettings, mechanism_for
from kafkawire.sasl_gssapi import Gssapi, KerberosSettings, start_gssapi
from mqwire.common.errors import AuthenticationError, ConfigurationError


@dataclass
class Wrapped:
    message: bytes


class FakeContext:
    """A context that completes on the broker's second token; wrapping prefixes ``W:``."""

    def __init__(self, steps_to_complete: int = 2) -> None:
        self.tokens: list[bytes | None] = []
        self.steps_to_complete = steps_to_complete
        self.wrapped: list[tuple[bytes, bool]] = []

    @property
    def complete(self) -> bool:
        return len(self.tokens) >= self.steps_to_complete

    def step(self, token: bytes | None = None) -> bytes | None:
        self.tokens.append(token)
        return None if self.complete else b"ap-req"

    def wrap(self, message: bytes, encrypt: bool) -> Wrapped:
        self.wrapped.append((message, encrypt))
        return Wrapped(b"W:" + message)

    def unwrap(self, message: bytes) -> Wrapped:
        if not message.startswith(b"W:"):
            raise RuntimeError("Major (851968): Unspecified GSS failure, Minor: bad token")
        return Wrapped(message[2:])


def started(context: FakeContext) -> Gssapi:
    context.step()
    return Gssapi(context, b"ap-req", "alice@EXAMPLE.TEST", authzid="alice@EXAMPLE.TEST")


def test_the_exchange_answers_the_ap_rep_then_takes_no_security_layer() -> None:
    context = FakeContext()
    gssapi = started(context)
    assert gssapi.first() == b"ap-req"
    # The AP-REP completes the context; the answer is empty and the broker's offer comes next.
    assert gssapi.answer(b"ap-rep") == b""
    assert not gssapi.said_last
    offer = b"W:" + struct.pack(">B", 0b111) + (65536).to_bytes(3, "big")
    answer = gssapi.answer(offer)
    assert answer == b"W:\x01\x00\x00\x00alice@EXAMPLE.TEST"
    assert context.wrapped == [(b"\x01\x00\x00\x00alice@EXAMPLE.TEST", False)]
    assert gssapi.said_last
    gssapi.finish(b"")


def test_a_broker_that_insists_on_a_security_layer_is_refused_by_name() -> None:
    gssapi = started(FakeContext())
    gssapi.answer(b"ap-rep")
    with pytest.raises(AuthenticationError, match=r"alice@EXAMPLE\.TEST.*insists on a security layer"):
        gssapi.answer(b"W:\x04\x01\x00\x00")


def test_an_unreadable_or_short_offer_is_an_authentication_error() -> None:
    gssapi = started(FakeContext())
    gssapi.answer(b"ap-rep")
    with pytest.raises(AuthenticationError, match=r"unreadable security-layer offer.*bad token"):
        gssapi.answer(b"not wrapped")
    with pytest.raises(AuthenticationError, match="2 bytes, not 4"):
        gssapi.answer(b"W:\x01\x00")


def test_a_context_that_never_completes_is_cut_short() -> None:
    gssapi = started(FakeContext(steps_to_complete=1000))
    with pytest.raises(AuthenticationError, match="never completes"):
        for _ in range(100):
            gssapi.answer(b"more")


def test_an_exchange_that_ends_before_the_security_layer_fails() -> None:
    gssapi = started(FakeContext())
    with pytest.raises(AuthenticationError, match="ended before the security layer"):
        gssapi.finish(b"")


def test_the_kerberos_options_are_checked() -> None:
    assert SaslSettings("GSSAPI").kerberos == KerberosSettings()
    with pytest.raises(ConfigurationError, match="sasl_kerberos_keytab needs sasl_kerberos_principal"):
        KerberosSettings(keytab="/k.keytab")
    with pytest.raises(ConfigurationError, match="sasl_kerberos_service_name"):
        KerberosSettings(service_name="")


def test_without_the_extra_gssapi_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_gssapi(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "gssapi":
            raise ImportError("no gssapi")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_gssapi)
    monkeypatch.delitem(sys.modules, "gssapi", raising=False)
    # When the client is made, before any connection.
    with pytest.raises(ConfigurationError, match=r"pip install mqwire\[kerberos\]"):
        kafkawire.connect("kafka://127.0.0.1:1", sasl_mechanism="GSSAPI")
    with pytest.raises(ConfigurationError, match=r"pip install mqwire\[kerberos\]"):
        asyncio.run(mechanism_for(SaslSettings("GSSAPI"), host="localhost", timeout=1.0))


def test_a_kdc_that_does_not_answer_is_an_error_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import kafkawire.sasl_gssapi as module

    released = threading.Event()

    def stuck(gssapi: Any, settings: KerberosSettings, host: str) -> Any:
        released.wait(10)
        raise AssertionError("the caller gave up before")

    monkeypatch.setattr(module, "load_binding", lambda: object())
    monkeypatch.setattr(module, "_first_step", stuck)
    settings = KerberosSettings(principal="alice@EXAMPLE.TEST")

    async def attempt() -> None:
        try:
            await start_gssapi(settings, "broker1", 0.05)
        finally:
            released.set()

    with pytest.raises(AuthenticationError, match=r"alice@EXAMPLE\.TEST: the KDC did not answer within 0\.05 s"):
        asyncio.run(attempt())


def test_the_connection_carries_every_round_and_checks_the_last_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import kafkawire.connection as connection_module
    from kafkawire.connection import KafkaConnection
    from kafkawire.protocol.messages import SaslHandshakeRequest

    context = FakeContext()
    mechanism = started(context)

    async def fake_mechanism_for(settings: SaslSettings, host: str, timeout: float) -> Gssapi:
        assert (host, timeout) == ("broker1", 7.0)
        return mechanism

    monkeypatch.setattr(connection_module, "mechanism_for", fake_mechanism_for)
    replies = iter([b"ap-rep", b"W:\x01\x00\x10\x00", b""])
    sent: list[bytes] = []

    async def request(body: Any, version: int | None = None) -> Any:
        if isinstance(body, SaslHandshakeRequest):
            return SimpleNamespace(error_code=0, mechanisms=["GSSAPI"])
        sent.append(body.auth_bytes)
        return SimpleNamespace(error_code=0, error_message=None, auth_bytes=next(replies))

    connection = KafkaConnection(("broker1", 9092), SimpleNamespace(name="kafka broker1:9092"), None, 7.0)  # type: ignore[arg-type]
    monkeypatch.setattr(connection, "request", request)
    asyncio.run(connection._authenticate(SaslSettings("GSSAPI")))
    # AP-REQ, the empty answer to the AP-REP, then the wrapped choice of no security layer: three rounds.
    assert sent == [b"ap-req", b"", b"W:\x01\x00\x00\x00alice@EXAMPLE.TEST"]
    assert next(replies, None) is None
