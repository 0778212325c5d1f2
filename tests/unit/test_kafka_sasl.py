"""The SASL mechanisms against their RFC test vectors, and the options that configure them."""

from __future__ import annotations

import asyncio
import hashlib
import threading

import pytest

from kafkawire.protocol.messages.sasl import SaslAuthenticateRequest
from kafkawire.sasl import OAuthBearer, Plain, SaslSettings, Scram, answer_challenge
from mqwire.common.errors import AuthenticationError


def test_scram_sha_256_matches_rfc_7677() -> None:
    scram = Scram("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert scram.answer(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    scram.finish(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(AuthenticationError, match="does not match"):
        scram.finish(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")


def test_scram_refuses_a_server_that_changes_the_nonce_or_answers_an_error() -> None:
    scram = Scram("SCRAM-SHA-512", "u", "p", nonce="abc")
    with pytest.raises(AuthenticationError, match="nonce"):
        scram.answer(b"r=other,s=c2FsdA==,i=4096")
    with pytest.raises(AuthenticationError, match="unreadable"):
        scram.answer(b"garbage")
    with pytest.raises(AuthenticationError, match="refused"):
        scram.finish(b"e=invalid-proof")


def test_plain_and_oauthbearer_messages() -> None:
    assert Plain("alice", "secret").first() == b"\0alice\0secret"
    assert OAuthBearer("tok").first() == b"n,,\x01auth=Bearer tok\x01\x01"


def test_settings_are_checked_and_hide_secrets() -> None:
    settings = SaslSettings("PLAIN", "alice", "s3cr3t-value")
    assert "s3cr3t-value" not in repr(settings)
    with pytest.raises(ValueError, match="sasl_mechanism"):
        SaslSettings("NTLM", "a", "b")
    with pytest.raises(ValueError, match="sasl_plain_password"):
        SaslSettings("SCRAM-SHA-256", "alice")
    with pytest.raises(ValueError, match="token_provider"):
        SaslSettings("OAUTHBEARER")


# Server-first messages a rogue broker could send, built on the client nonce "abc".
SALT = "c2FsdA=="


def test_scram_refuses_an_iteration_count_below_4096() -> None:
    for iterations in (1, 4095):
        scram = Scram("SCRAM-SHA-256", "u", "p", nonce="abc")
        with pytest.raises(AuthenticationError, match="iterations"):
            scram.answer(f"r=abcXYZ,s={SALT},i={iterations}".encode())
    assert Scram("SCRAM-SHA-256", "u", "p", nonce="abc").answer(f"r=abcXYZ,s={SALT},i=4096".encode()) is not None


def test_scram_refuses_a_server_nonce_equal_to_the_clients() -> None:
    scram = Scram("SCRAM-SHA-512", "u", "p", nonce="abc")
    with pytest.raises(AuthenticationError, match="nonce"):
        scram.answer(f"r=abc,s={SALT},i=4096".encode())


def _derivation_watch(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[tuple[int, bool]]]:
    """Replaces the key derivation by one that records its thread and waits for the loop to set an event:
    run on the loop, it would wait in vain, as the loop cannot run while it waits."""
    loop_ran = threading.Event()
    calls: list[tuple[int, bool]] = []
    real = hashlib.pbkdf2_hmac

    def watched(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        calls.append((threading.get_ident(), loop_ran.wait(5 if iterations > 16384 else 0)))
        return real(name, password, salt, 1)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", watched)
    return loop_ran, calls


async def test_scram_derives_a_large_iteration_count_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    loop_ran, calls = _derivation_watch(monkeypatch)
    scram = Scram("SCRAM-SHA-256", "u", "p", nonce="abc")
    ticker = asyncio.get_running_loop().call_soon(loop_ran.set)
    answer = await answer_challenge(scram, f"r=abcXYZ,s={SALT},i=1000000".encode())
    ticker.cancel()
    assert answer is not None
    assert len(calls) == 1
    thread, loop_went_on = calls[0]
    assert thread != threading.get_ident()
    assert loop_went_on, "the event loop did not run while the key was derived"
    # A count the Java client's own server would pick stays on the loop: no thread for every login.
    calls.clear()
    scram = Scram("SCRAM-SHA-256", "u", "p", nonce="abc")
    assert await answer_challenge(scram, f"r=abcXYZ,s={SALT},i=4096".encode()) is not None
    assert [thread for thread, _ in calls] == [threading.get_ident()]


async def test_scram_refuses_a_bad_challenge_before_any_derivation(monkeypatch: pytest.MonkeyPatch) -> None:
    _, calls = _derivation_watch(monkeypatch)
    scram = Scram("SCRAM-SHA-256", "u", "p", nonce="abc")
    with pytest.raises(AuthenticationError, match="iterations"):
        await answer_challenge(scram, f"r=abcXYZ,s={SALT},i=1".encode())
    assert calls == []


def test_a_sasl_authenticate_request_does_not_show_its_bytes() -> None:
    request = SaslAuthenticateRequest(auth_bytes=Plain("alice", "s3cr3t-value").first())
    assert "s3cr3t-value" not in repr(request) and "s3cr3t-value" not in str(request)
    assert "<19 bytes>" in repr(request)
