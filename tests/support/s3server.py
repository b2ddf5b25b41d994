"""A real S3-compatible server for tests and benchmarks: moto's server on 127.0.0.1.

:func:`start_s3_server` starts moto's S3 application in a child process on a free port of
127.0.0.1 and returns an :class:`S3Server` with the endpoint, a set of credentials and
helpers (environment variables, fsspec ``storage_options``, a fresh bucket). Anything that
speaks S3 can use it: this process through ``s3fs``, forked workers through the
environment, Spark executors through ``fs.s3a.*`` settings.

The server handles one request at a time. moto checks ``If-None-Match: *`` and stores the
object in two steps without a lock, so a threaded moto could let two racing conditional
PUTs both succeed, which S3 itself never does; serving requests one by one makes every
request atomic, as each is on S3. (Requests use HTTP/1.0, one connection each, so no client
can hold the server.)

Example (not run as a doctest: it starts a server)::

    server = start_s3_server()
    try:
        bucket = server.create_bucket()
        with patched_environ(server.env()):
            fermion.write_dataset(data, f"s3://{bucket}/table")
    finally:
        server.stop()

Run as a script (``python tests/support/s3server.py --port N``) it is the server itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["S3Server", "free_port", "patched_environ", "start_s3_server"]

HOST = "127.0.0.1"
REGION = "us-east-1"
START_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class S3Server:
    """A running moto S3 server and the credentials that reach it.

    The secret key is unique per server (``fermion-test-secret-<hex>``), so a test can
    search objects, logs and error text for it.
    """

    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    process: subprocess.Popen[bytes] = field(repr=False)
    region: str = REGION

    def env(self) -> dict[str, str]:
        """Environment variables that point boto, s3fs (and moto's own checks) at it."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def storage_options(self) -> dict[str, Any]:
        """``s3fs.S3FileSystem`` keyword arguments (fsspec ``storage_options``)."""
        return {
            "key": self.access_key_id,
            "secret": self.secret_access_key,
            "endpoint_url": self.endpoint_url,
            "client_kwargs": {"region_name": self.region},
        }

    def filesystem(self, **options: Any) -> Any:
        """A new ``s3fs.S3FileSystem`` on this server (not shared through fsspec's cache)."""
        import s3fs

        return s3fs.S3FileSystem(
            **{**self.storage_options(), "skip_instance_cache": True, **options}
        )

    def create_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh ``fermion-<hex>`` name by default) and return its name."""
        name = name or f"fermion-{uuid.uuid4().hex[:12]}"
        self.filesystem().call_s3("create_bucket", Bucket=name)
        return name

    def alive(self) -> bool:
        """Whether the server process still runs."""
        return self.process.poll() is None

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_s3_server(*, port: int | None = None, timeout: float = START_TIMEOUT) -> S3Server:
    """Start moto's S3 server on 127.0.0.1 (a free port unless given) and wait until it
    answers.

    Raises:
        RuntimeError: The server exited or did not answer within ``timeout`` seconds.
    """
    port = port or free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            os.path.abspath(__file__),
            "--port",
            str(port),
            "--parent",
            str(os.getpid()),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://{HOST}:{port}"
    server = S3Server(
        endpoint_url=endpoint,
        access_key_id=f"FERMIONTEST{uuid.uuid4().hex[:9].upper()}",
        secret_access_key=f"fermion-test-secret-{uuid.uuid4().hex}",
        process=process,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the S3 server exited with {process.returncode} at start")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=2):
                return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"the S3 server did not answer on {endpoint} within {timeout}s")


@contextlib.contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of a ``with`` block."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _exit_with(parent: int) -> None:
    """Exit once ``parent`` is gone (a test run killed without stopping its server)."""
    import threading

    def watch() -> None:
        while True:
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(0)
            time.sleep(1)

    threading.Thread(target=watch, daemon=True).start()


def _serve(port: int, parent: int | None = None) -> None:
    """Serve moto's S3 API on 127.0.0.1:port, one request at a time, until terminated (or
    until the process ``parent`` exits)."""
    import signal

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if parent:
        _exit_with(parent)
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(HOST, port, app, threaded=False, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--parent", type=int, help="exit when this process is gone")
    args = parser.parse_args()
    _serve(args.port, args.parent)
