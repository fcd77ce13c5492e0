"""What the tests of the MCP client in this folder share."""

import pytest

from mcp_runtime_support import ASKER, http_fixture


@pytest.fixture(scope="module")
def asker():
    """One asking server over HTTP for a module's tests about what hostlink does with its requests
    (a server per test costs ~0.7 s of CPU): each host opens a session of its own and the server
    keeps nothing between calls. The terminal tests run it over stdio, as a child of the CLI."""
    with http_fixture(script=ASKER) as server:
        yield server
