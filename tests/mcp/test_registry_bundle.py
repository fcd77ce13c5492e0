"""An MCPB bundle in process: what each refusal says and what it leaves on disk, from the download
to the manifest. The CLI tests (tests/cli/test_mcp_registry.py) add a bundle end to end."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import socket
import threading
import time
import zipfile

import pytest

from hostlink.mcp.registry import bundle
from hostlink.mcp.registry.bundle import bundle_command, install_bundle
from hostlink.mcp.registry.client import RegistryError
from registry_support import fixture_registry

PYTHON = "/usr/bin/python3"


def _zip(files):
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return data.getvalue()


def _manifest(config):
    return json.dumps({"manifest_version": "0.2", "name": "demo", "version": "1.0.0",
                       "server": {"type": "python", "entry_point": "server.py", "mcp_config": config}})


def _environ(tmp_path):
    return {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}


def _home(tmp_path):
    return tmp_path / "state" / "hostlink" / "mcpb"


@pytest.fixture(scope="module")
def registry():
    with fixture_registry([]) as serving:
        yield serving


@pytest.fixture
def serving(registry):
    registry.answers, registry.paths, registry.delay = {}, [], 0.0
    return registry


def _offer(registry, data):
    registry.answers["/bundles/"] = (200, data)
    return f"{registry.url}/bundles/demo.mcpb", hashlib.sha256(data).hexdigest()


def test_a_verified_bundle_is_unpacked_under_its_hash_once(tmp_path, serving):
    url, sha256 = _offer(serving, _zip({"manifest.json": _manifest({"command": PYTHON}), "server.py": "pass"}))
    installed = install_bundle(url, sha256, _environ(tmp_path))
    assert installed == _home(tmp_path) / sha256
    assert (installed / "server.py").read_text() == "pass"
    assert [p.name for p in _home(tmp_path).iterdir()] == [sha256]  # no download left beside it
    assert install_bundle(url, sha256, _environ(tmp_path)) == installed
    assert len([p for p in serving.paths if p.startswith("/bundles/")]) == 1  # the second time, not fetched


def _refusal(url, sha256, environ):
    with pytest.raises(RegistryError) as refused:
        install_bundle(url, sha256, environ)
    return str(refused.value)


def test_a_bundle_whose_hash_differs_is_refused_and_removed(tmp_path, serving):
    url, _ = _offer(serving, _zip({"manifest.json": _manifest({"command": PYTHON})}))
    assert _refusal(url, "0" * 64, _environ(tmp_path)) == (
        "the MCPB bundle's SHA-256 does not match the record's fileSha256; it was refused and removed")
    assert list(_home(tmp_path).iterdir()) == []


def test_a_bundle_without_a_manifest_is_refused(tmp_path, serving):
    url, sha256 = _offer(serving, _zip({"server.py": "pass"}))
    assert _refusal(url, sha256, _environ(tmp_path)) == "the MCPB bundle has no manifest.json"


def test_a_bundle_past_its_bounds_is_refused_before_anything_is_unpacked(tmp_path, serving, monkeypatch):
    monkeypatch.setattr(bundle, "MAX_MEMBERS", 2)
    url, sha256 = _offer(serving, _zip({"manifest.json": _manifest({"command": PYTHON}), "a": "", "b": ""}))
    assert _refusal(url, sha256, _environ(tmp_path)) == (
        "the MCPB bundle unpacks past its bounds (files or size); it is refused")
    assert list(_home(tmp_path).iterdir()) == []


def test_a_download_too_large_refused_unreachable_or_stalled_says_so(tmp_path, serving, monkeypatch):
    environ = _environ(tmp_path)
    url, sha256 = _offer(serving, _zip({"manifest.json": _manifest({"command": PYTHON})}))
    with monkeypatch.context() as bounded:
        bounded.setattr(bundle, "MAX_BUNDLE_BYTES", 16)
        assert _refusal(url, sha256, environ).startswith("the MCPB bundle: a response exceeded ")
    assert _refusal("http://bundles.example.com/demo.mcpb", sha256, environ).startswith(  # plain http off loopback
        "the MCPB bundle: a request to a URL named by server metadata was refused before it was sent")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert _refusal(f"http://127.0.0.1:{port}/demo.mcpb", sha256, environ) == (
        "the MCPB bundle could not be downloaded (ConnectError)")
    monkeypatch.setattr(bundle, "REQUEST_SECONDS", 0.05)
    serving.delay = 0.5
    assert _refusal(url, sha256, environ) == "the MCPB bundle could not be downloaded (ReadTimeout)"
    with _trickling() as trickle:  # a byte at a time, each in time, the whole never
        assert _refusal(trickle, sha256, environ) == "the MCPB bundle did not download in time"
    assert list(_home(tmp_path).iterdir()) == []  # nothing of any failed download is left


@contextlib.contextmanager
def _trickling():
    """A server on 127.0.0.1 that answers 200 and then one byte every 10 ms, for a second."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        with contextlib.suppress(OSError):
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
                for _ in range(100):
                    connection.sendall(b"x")
                    time.sleep(0.01)

    serving = threading.Thread(target=serve, daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/demo.mcpb"
    finally:
        listener.close()
        serving.join(5)


def _unpacked(tmp_path, manifest: bytes | str):
    directory = tmp_path / "bundle"
    directory.mkdir(exist_ok=True)
    (directory / "manifest.json").write_bytes(manifest.encode() if isinstance(manifest, str) else manifest)
    return directory


def test_the_manifest_command_and_env_have_the_directory_filled_in(tmp_path):
    directory = _unpacked(tmp_path, _manifest({"command": PYTHON, "args": "${__dirname}/server.py",
                                               "env": {"DATA": "${__dirname}/data", "MODE": "fast"}}))
    assert bundle_command(directory) == {"command": PYTHON, "args": [f"{directory}/server.py"],
                                         "env": {"DATA": f"{directory}/data", "MODE": "fast"}}
    assert bundle_command(_unpacked(tmp_path, _manifest({"command": PYTHON}))) == {"command": PYTHON, "args": []}


@pytest.mark.parametrize(("manifest", "message"), [
    ("{not json", "the MCPB bundle's manifest.json is not JSON"),
    ("[" * 100_000 + "]" * 100_000, "the MCPB bundle's manifest.json is not JSON"),
    (b" " * (1024 * 1024 + 1), "the MCPB bundle's manifest.json is larger than 1 MiB"),
    ('["a list"]', "the MCPB bundle's manifest.json has no server.mcp_config"),
    ('{"server": {"type": "python"}}', "the MCPB bundle's manifest.json has no server.mcp_config"),
    (_manifest({"command": PYTHON, "env": {"PORT": 8080}}), "has an env that is not strings"),
    (_manifest({"command": PYTHON, "env": ["A=b"]}), "has an env that is not strings"),
    (_manifest({"command": PYTHON, "env": {"KEY": "${user_config.key}"}}), "contains '$'"),
])
def test_a_manifest_that_cannot_be_run_as_written_is_refused(tmp_path, manifest, message):
    with pytest.raises(RegistryError) as refused:
        bundle_command(_unpacked(tmp_path, manifest))
    assert message in str(refused.value)
