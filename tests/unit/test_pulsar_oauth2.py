"""OAuth2 client credentials and TLS authentication: what is checked before any connection."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import pulsarwire
from mqwire.common.errors import ConfigurationError

ISSUER = "https://127.0.0.1:1/issuer"


def credentials(tmp_path: Path, **fields: str) -> Path:
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps(fields))
    return path


@pytest.mark.parametrize("form", ["path", "file-url", "data-url"])
def test_credentials_file_as_path_file_url_or_data_url(tmp_path: Path, form: str) -> None:
    path = credentials(tmp_path, type="client_credentials", client_id="id-1", client_secret="secret-1")
    location = {
        "path": str(path),
        "file-url": f"file://{path}",
        "data-url": "data:application/json;base64," + base64.b64encode(path.read_bytes()).decode(),
    }[form]
    oauth2 = pulsarwire.OAuth2ClientCredentials(ISSUER, private_key=location)
    assert oauth2.client_id == "id-1"
    assert "secret-1" not in repr(oauth2)


def test_credentials_are_required_once(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="private_key"):
        pulsarwire.OAuth2ClientCredentials(ISSUER)
    with pytest.raises(ValueError, match="not both"):
        pulsarwire.OAuth2ClientCredentials(ISSUER, private_key=str(tmp_path / "x"), client_id="a", client_secret="b")
    with pytest.raises(ConfigurationError, match="private_key"):
        pulsarwire.OAuth2ClientCredentials(ISSUER, private_key=str(tmp_path / "missing.json"))
    with pytest.raises(ConfigurationError, match="client_secret"):
        pulsarwire.OAuth2ClientCredentials(ISSUER, private_key=str(credentials(tmp_path, client_id="only-id")))


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("issuer_url", "ftp://idp", "issuer_url"),
        ("early_token_refresh_percent", 1.5, "early_token_refresh_percent"),
        ("early_token_refresh_percent", 0, "early_token_refresh_percent"),
        ("request_timeout", -1, "request_timeout"),
        ("token_endpoint", "not a url", "token_endpoint"),
    ],
)
def test_bad_options_name_the_option(option: str, value: object, message: str) -> None:
    given: dict[str, object] = {"issuer_url": ISSUER, "client_id": "a", "client_secret": "b", option: value}
    with pytest.raises(ValueError, match=message):
        pulsarwire.OAuth2ClientCredentials(**given)  # type: ignore[arg-type]


def test_tls_authentication_needs_tls_and_a_certificate_and_no_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tls_authentication"):
        pulsarwire.Client("pulsar://127.0.0.1:6650", tls_authentication=True)
    with pytest.raises(ValueError, match="tls_authentication"):
        pulsarwire.Client("pulsar+ssl://127.0.0.1:6651", tls_authentication=True)
    with pytest.raises(ValueError, match="exclude"):
        pulsarwire.Client("pulsar+ssl://127.0.0.1:6651", tls_authentication=True, auth_token="t")
    with pytest.raises(TypeError, match="tls_authentication"):
        pulsarwire.Client("pulsar+ssl://127.0.0.1:6651", tls_authentication="yes")  # type: ignore[typeddict-item]
