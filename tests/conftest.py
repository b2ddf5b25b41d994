"""Fixtures shared by every test package: a real S3-compatible server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.s3server import S3Server, start_s3_server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server in a child process for the whole session (started on first use)."""
    server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server, with ``AWS_*`` variables pointing boto and s3fs at it for one test."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def s3_bucket(s3_env: S3Server) -> str:
    """A fresh, empty bucket on the server (with the environment set)."""
    return s3_env.create_bucket()
