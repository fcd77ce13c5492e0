"""Hostile configuration files: structure-aware fuzzing of whole `mcpServers` documents.

Every document either loads or fails with one ConfigError that names the file, carries no
control character and never repeats a planted secret (a literal value or one reached through
`${VAR}`); no other exception escapes. The keys are the schema's own, so most examples get
past the JSON shape and reach the field rules.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hostlink.mcp.config.load import ConfigError, load_config

SECRET = "SUPERSECRET-42"
KEYS = ["command", "args", "env", "cwd", "url", "headers", "auth", "bearerTokenEnv", "oauth", "protocolVersion",
        "requestTimeoutMs", "disabled", "type", "grantType", "clientId", "clientSecretEnv", "issuer",
        "clientMetadataUrl", "redirectUri", "scope", "bogus"]
HOSTILE_TEXT = st.sampled_from([
    SECRET, "${SECRET}", "${SECRET:-x}", "${MISSING}", "!echo " + SECRET, "\x1b]0;owned\x07", "\x00", "\ud800",
    "http://0.0.0.0:1/" + SECRET, "https://user:" + SECRET + "@example.com/mcp", "https://example.com/mcp#" + SECRET,
    "http://127.0.0.1:9/mcp", "python3", "x" * 5000, "", "oauth", "bearer", "stdio", "sse", "auto", "legacy",
    "client_credentials", "API_" + SECRET,
])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(KEYS) | st.sampled_from(["A", "b c"]), inner, max_size=4),
    max_leaves=12,
)
ENTRY = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6)
DOCUMENT = st.dictionaries(st.sampled_from(["ok", "srv-1", "\x1b[31m", "a" * 70]), ENTRY, max_size=3)


@given(DOCUMENT)
@settings(max_examples=400, deadline=None)
def test_a_hostile_document_loads_or_names_its_problem_without_echoing(tmp_path_factory, document):
    home = tmp_path_factory.mktemp("home")
    config = home / "mcp"
    config.mkdir()
    (config / "mcp.json").write_text(json.dumps({"mcpServers": document}))
    environ = {"XDG_CONFIG_HOME": str(home), "SECRET": SECRET, "HOME": str(home)}
    try:
        messages = list(load_config(Path(home), False, environ).broken.values())
    except ConfigError as error:
        messages = [str(error)]
    for message in messages:
        assert message.startswith(str(config / "mcp.json")), message
        assert SECRET not in message, message
        assert message.isprintable(), repr(message)
