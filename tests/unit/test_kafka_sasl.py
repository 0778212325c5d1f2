"""The SASL mechanisms against their RFC test vectors, and the options that configure them."""

from __future__ import annotations

import pytest

from kafkawire.sasl import OAuthBearer, Plain, SaslSettings, Scram
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
        SaslSettings("GSSAPI", "a", "b")
    with pytest.raises(ValueError, match="sasl_plain_password"):
        SaslSettings("SCRAM-SHA-256", "alice")
    with pytest.raises(ValueError, match="token_provider"):
        SaslSettings("OAUTHBEARER")
