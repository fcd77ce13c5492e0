"""Server-entry rules of hostlink.mcp.config.schema, seen through config parsing: cross-field rules,
limits, safe URLs, ${VAR} interpolation, "!" secrets, and no secret value in any message."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostlink.mcp.config.load import ConfigError, parse_document
from hostlink.mcp.config.schema import HttpServer, OAuthSettings, StdioServer, check_url

SECRET = "S3CR3T-hunter2-value"
SRC = Path("/cfg/mcp.json")


def parse(entry, environ=None, name="s"):
    return parse_document(json.dumps({"mcpServers": {name: entry}}), SRC, environ or {})[name]


def refused(entry, environ=None) -> str:
    """The error message for an entry that must be refused; checks it names the file, not the secret."""
    with pytest.raises(ConfigError) as err:
        parse(entry, environ)
    message = str(err.value)
    assert message.startswith(f"{SRC}: mcpServers.s")
    assert SECRET not in message
    return message.removeprefix(f"{SRC}: mcpServers.s")


HTTPS = "https://mcp.example.com/mcp"
OAUTH_CC = {"grantType": "client_credentials", "clientId": "cid", "clientSecretEnv": "CID_SECRET",
            "issuer": "https://auth.example.com"}
OAUTH_JWT = {"grantType": "client_credentials", "clientId": "cid", "issuer": "https://auth.example.com",
             "clientAssertion": {"keyEnv": "CID_KEY", "alg": "ES256", "kid": "key-1"}}


def test_full_stdio_and_http_entries_parse():
    stdio = parse({"command": "python", "args": ["-m", "srv"], "env": {"K": "v"}, "cwd": "/srv",
                   "protocolVersion": "legacy", "requestTimeoutMs": 100, "disabled": True})
    assert stdio == StdioServer(command="python", args=["-m", "srv"], env={"K": "v"}, cwd="/srv",
                                protocol_version="legacy", request_timeout_ms=100, disabled=True)
    http = parse({"url": HTTPS, "auth": "oauth", "protocolVersion": "2026-07-28", "requestTimeoutMs": 300000,
                  "oauth": {"clientId": "c", "clientSecretEnv": "C_S", "issuer": "https://a.example",
                            "redirectUri": "http://127.0.0.1:8123/callback", "scope": "read write"}})
    assert http.oauth == OAuthSettings(client_id="c", client_secret_env="C_S", issuer="https://a.example",
                                       redirect_uri="http://127.0.0.1:8123/callback", scope="read write")
    assert http.oauth.grant_type == "authorization_code" and http.request_timeout_ms == 300000
    assert parse({"url": HTTPS, "auth": "oauth", "oauth": OAUTH_CC}).oauth.grant_type == "client_credentials"
    assert parse({"url": HTTPS, "auth": "oauth"}).oauth is None
    assertion = parse({"url": HTTPS, "auth": "oauth", "oauth": OAUTH_JWT}).oauth.client_assertion
    assert (assertion.key_env, assertion.alg, assertion.kid) == ("CID_KEY", "ES256", "key-1")
    assert parse({"url": HTTPS, "auth": "bearer", "bearerTokenEnv": "TOKEN"}).bearer_token_env == "TOKEN"
    assert parse({"url": HTTPS, "auth": "oauth", "oauth": {"clientMetadataUrl": "https://app.example/cimd.json"}})


def test_defaults():
    server = parse({"command": "x"})
    assert (server.protocol_version, server.request_timeout_ms, server.disabled) == ("auto", 15000, False)
    assert (server.tool_timeout_ms, server.tasks) == (60000, False)  # a call waits as long as Codex's does
    assert (server.args, server.env, server.cwd) == ([], {}, None)
    http = parse({"url": HTTPS})
    assert (http.headers, http.auth, http.bearer_token_env, http.oauth) == ({}, None, None, None)


def test_models_are_frozen_and_hide_secret_maps_from_repr():
    stdio = StdioServer(command="x", env={"K": SECRET})
    http = HttpServer(url=HTTPS, headers={"X-Key": SECRET})
    assert SECRET not in repr(stdio) and SECRET not in repr(http)
    with pytest.raises(ValueError, match="frozen"):
        stdio.command = "y"


@pytest.mark.parametrize(("entry", "message"), [
    ({}, ': exactly one of "command" (stdio) or "url" (Streamable HTTP) is required'),
    ({"command": "x", "url": HTTPS}, ': exactly one of "command" (stdio) or "url" (Streamable HTTP) is required'),
    ({"command": ""}, ".command: String should have at least 1 character"),
    ({"command": 1}, ".command: Input should be a valid string"),
    ({"command": "x", "headers": {"A": SECRET}}, ".headers: only allowed for a Streamable HTTP server (url)"),
    ({"command": "x", "auth": "bearer"}, ".auth: only allowed for a Streamable HTTP server (url)"),
    ({"command": "x", "bearerTokenEnv": "T"}, ".bearerTokenEnv: only allowed for a Streamable HTTP server (url)"),
    ({"command": "x", "oauth": {}}, ".oauth: only allowed for a Streamable HTTP server (url)"),
    ({"url": HTTPS, "args": [SECRET]}, ".args: only allowed for a stdio server (command)"),
    ({"url": HTTPS, "env": {"A": SECRET}}, ".env: only allowed for a stdio server (command)"),
    ({"url": HTTPS, "cwd": "/"}, ".cwd: only allowed for a stdio server (command)"),
    ({"command": "x", "secretCommand": SECRET}, ".secretCommand: unknown field"),
    ({"command": "x", "request_timeout_ms": 100}, ".request_timeout_ms: unknown field"),  # config keys are camelCase
    ({"url": HTTPS, "auth": "bearer"}, ': bearerTokenEnv is required when auth is "bearer"'),
    ({"url": HTTPS, "bearerTokenEnv": "T"}, ': bearerTokenEnv is only allowed when auth is "bearer"'),
    ({"url": HTTPS, "auth": "oauth", "bearerTokenEnv": "T"}, ': bearerTokenEnv is only allowed when auth is "bearer"'),
    ({"url": HTTPS, "oauth": {}}, ': oauth is only allowed when auth is "oauth"'),
    ({"url": HTTPS, "auth": "bearer", "bearerTokenEnv": "T", "oauth": {}},
     ': oauth is only allowed when auth is "oauth"'),
    ({"url": HTTPS, "auth": "basic"}, ".auth: Input should be 'oauth' or 'bearer'"),
    ({"url": HTTPS, "auth": "bearer", "bearerTokenEnv": "T", "headers": {"authorization": SECRET}},
     ": headers.Authorization is not allowed together with auth (hostlink sets the Authorization header)"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"grantType": "client_credentials"}},
     '.oauth: grantType "client_credentials" requires clientId, clientSecretEnv (or clientAssertion), issuer'),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_CC, "issuer": None}},
     '.oauth: grantType "client_credentials" requires issuer'),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"grantType": "client_credentials", "clientId": "c", "issuer": HTTPS}},
     '.oauth: grantType "client_credentials" requires clientSecretEnv (or clientAssertion)'),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_CC, "clientAssertion": {"keyEnv": "K", "alg": "ES256"}}},
     ".oauth: clientSecretEnv and clientAssertion are mutually exclusive "
     "(the client authenticates with a secret or with a signed assertion)"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"clientAssertion": {"keyEnv": "K", "alg": "ES256"}}},
     '.oauth: clientAssertion is only allowed with grantType "client_credentials"'),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_JWT, "clientAssertion": {"keyEnv": "K", "alg": "HS256"}}},
     ".oauth.clientAssertion.alg: Input should be 'RS256' or 'ES256'"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_JWT, "clientAssertion": {"alg": "RS256"}}},
     ".oauth.clientAssertion.keyEnv: required"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_JWT, "clientAssertion": {"keyEnv": "K", "alg": "RS256",
                                                                               "key": SECRET}}},
     ".oauth.clientAssertion.key: unknown field"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_JWT, "clientAssertion": {"keyEnv": "1K", "alg": "RS256"}}},
     ".oauth.clientAssertion.keyEnv: must be an environment variable name (letters, digits, _; not starting "
     "with a digit)"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_JWT, "clientAssertion": {"keyEnv": "K", "alg": "RS256",
                                                                               "kid": ""}}},
     ".oauth.clientAssertion.kid: String should have at least 1 character"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_CC, "redirectUri": "http://127.0.0.1:9/cb"}},
     '.oauth: redirectUri is not allowed with grantType "client_credentials" (no redirect)'),
    ({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_CC, "clientMetadataUrl": "https://a.example/c.json"}},
     '.oauth: clientMetadataUrl is not allowed with grantType "client_credentials" (no redirect)'),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"clientId": "c", "clientMetadataUrl": "https://a.example/c"}},
     ".oauth: clientId and clientMetadataUrl are mutually exclusive (with clientMetadataUrl the URL is the client id)"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"clientSecretEnv": "S"}}, ".oauth: clientSecretEnv requires clientId"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"grantType": "password"}},
     ".oauth.grantType: Input should be 'authorization_code' or 'client_credentials'"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"clientSecret": SECRET}}, ".oauth.clientSecret: unknown field"),
    ({"url": HTTPS, "auth": "oauth", "oauth": {"callbackPort": 8080}}, ".oauth.callbackPort: unknown field"),
    ({"url": HTTPS, "auth": "oauth", "oauth": []},
     ".oauth: Input should be a valid dictionary or instance of OAuthSettings"),
    ({"command": "x", "protocolVersion": "2025-06-18"},
     ".protocolVersion: Input should be 'auto', 'legacy' or '2026-07-28'"),
    ({"command": "x", "disabled": "yes"}, ".disabled: Input should be a valid boolean"),
    ({"command": "x", "disabled": SECRET}, ".disabled: Input should be a valid boolean"),
    ({"command": "x", "args": "a b"}, ".args: Input should be a valid list"),
    ({"command": "x", "args": ["ok", 3]}, ".args.1: Input should be a valid string"),
    ({"command": "x", "env": {"K": 3}}, ".env.K: Input should be a valid string"),
    ({"command": "x", "env": [SECRET]}, ".env: Input should be a valid dictionary"),
    ({"command": "x", "cwd": 3}, ".cwd: Input should be a valid string"),
    ({"command": "x", "args": ["a\u0000" + SECRET]}, ".args.0: must not contain a NUL character"),
    ({"command": "x", "env": {"K": "\ud800" + SECRET}}, ".env.K: must not contain a lone surrogate escape"),
    ({"command": "x", "args": ["-"], "disabled": 1, "cwd": 2},
     ".disabled: Input should be a valid boolean (and 1 more problem)"),
])
def test_cross_field_and_type_rules_fail_closed_naming_the_field(entry, message):
    assert refused(entry) == message


@pytest.mark.parametrize(("value", "ok"), [
    (99, False), (100, True), (15000, True), (300000, True), (300001, False), (-1, False),
    (True, False), (150.0, False), ("15000", False), (None, False),
])
def test_request_timeout_range_and_type(value, ok):
    entry = {"command": "x", "requestTimeoutMs": value}
    if ok:
        assert parse(entry).request_timeout_ms == value
    else:
        assert refused(entry).startswith(".requestTimeoutMs: ")


@pytest.mark.parametrize(("value", "ok"), [(99, False), (100, True), (3600000, True), (3600001, False), (True, False)])
def test_tool_timeout_range_and_type(value, ok):
    entry = {"command": "x", "toolTimeoutMs": value}
    if ok:
        assert parse(entry).tool_timeout_ms == value
    else:
        assert refused(entry).startswith(".toolTimeoutMs: ")


def test_tasks_is_a_boolean_opt_in():
    assert parse({"command": "x", "tasks": True}).tasks is True
    assert refused({"command": "x", "tasks": "yes"}).startswith(".tasks: ")


def test_args_limit_is_128():
    assert len(parse({"command": "x", "args": ["a"] * 128}).args) == 128
    assert refused({"command": "x", "args": ["a"] * 129}) == \
        ".args: List should have at most 128 items after validation, not 129"


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "É", "A=B", "A\u0000"])
def test_env_variable_names_are_validated(name):
    env_problem = "must be an environment variable name (letters, digits, _; not starting with a digit)"
    assert refused({"command": "x", "env": {name: SECRET}}).endswith(env_problem)
    assert refused({"url": HTTPS, "auth": "bearer", "bearerTokenEnv": name}) == f".bearerTokenEnv: {env_problem}"
    assert refused({"url": HTTPS, "auth": "oauth", "oauth": {"clientId": "c", "clientSecretEnv": name}}) == \
        f".oauth.clientSecretEnv: {env_problem}"


def test_header_names_and_values_are_validated():
    assert refused({"url": HTTPS, "headers": {"Bad Name": SECRET}}) == \
        ".headers.'Bad Name': must be an HTTP header name token"
    for value in (f"a\r\nX-Injected: {SECRET}", f"{SECRET}\n", f"x\u0000{SECRET}"):
        assert refused({"url": HTTPS, "headers": {"X-Key": value}}).startswith(".headers.X-Key: ")
    assert refused({"url": HTTPS, "headers": {"X-Key": 1}}) == ".headers.X-Key: Input should be a valid string"


UNSAFE_URLS = [
    (f"http://mcp.example.com/mcp?token={SECRET}", "http is only allowed on a loopback host"),
    (f"http://127.0.0.1.evil.example/{SECRET}", "http is only allowed on a loopback host"),
    (f"http://localhost.evil.example/{SECRET}", "http is only allowed on a loopback host"),
    (f"http://127.1/{SECRET}", "http is only allowed on a loopback host"),
    (f"http://2130706433/{SECRET}", "http is only allowed on a loopback host"),
    (f"http://[::ffff:127.0.0.1]/{SECRET}", "http is only allowed on a loopback host"),
    (f"http://0.0.0.0/{SECRET}", "http is only allowed on a loopback host"),
    (f"https://user:{SECRET}@mcp.example.com/", "must not contain userinfo"),
    (f"https://{SECRET}@mcp.example.com/", "must not contain userinfo"),
    (f"http://u:{SECRET}@127.0.0.1:80/", "must not contain userinfo"),
    (f"https://mcp.example.com/#{SECRET}", "must not contain a fragment"),
    ("https://mcp.example.com/#", "must not contain a fragment"),
    (f"ftp://mcp.example.com/{SECRET}", "scheme must be https"),
    (f"file:///etc/{SECRET}", "scheme must be https"),
    (f"javascript:alert('{SECRET}')", "scheme must be https"),
    (f"ws://127.0.0.1/{SECRET}", "scheme must be https"),
    (f"//mcp.example.com/{SECRET}", "scheme must be https"),
    (f"mcp.example.com/{SECRET}", "scheme must be https"),
    (f"https:///{SECRET}", "must name a host"),
    (f"https://mcp.example.com:99999/{SECRET}", "is not a valid URL"),
    (f"https://[::1/{SECRET}", "is not a valid URL"),
    (f"https://mcp.example.com/ {SECRET}", "must not contain whitespace"),
    (f"https://mcp.example.com/\t{SECRET}", "must not contain whitespace"),
    (f"https://evil.example\\@good.example/{SECRET}", "backslashes"),
    (f"https://mcp.example.com/\x1b[31m{SECRET}", "control characters"),
]


@pytest.mark.parametrize(("url", "problem"), UNSAFE_URLS)
def test_unsafe_urls_are_refused_without_echoing_them(url, problem):
    message = refused({"url": url})
    assert message.startswith(".url: ") and problem in message
    oauth = {"url": HTTPS, "auth": "oauth"}
    assert problem in refused({**oauth, "oauth": {"issuer": url}})
    assert problem in refused({**oauth, "oauth": {"clientMetadataUrl": url}})


@pytest.mark.parametrize("url", [
    "https://mcp.example.com/mcp?x=1", "HTTPS://MCP.EXAMPLE.COM/", "http://127.0.0.1:8080/mcp",
    "http://127.255.0.9/mcp", "http://[::1]:3000/mcp", "http://localhost/mcp", "http://LOCALHOST:1/",
    "https://[2001:db8::1]/mcp", "https://mcp.example.com:8443",
])
def test_safe_urls_are_accepted(url):
    assert parse({"url": url}).url == url


def test_issuer_must_not_have_a_query():
    assert refused({"url": HTTPS, "auth": "oauth", "oauth": {**OAUTH_CC, "issuer": f"https://a.example/?k={SECRET}"}}) \
        == ".oauth.issuer: issuer must not contain a query"


@pytest.mark.parametrize("uri", [
    "https://127.0.0.1:8/cb", "http://example.com:8/cb", "http://127.0.0.1/cb", f"http://u:{SECRET}@127.0.0.1:8/",
    "http://127.0.0.1:8/cb#frag", "http://localhost:8080/cb", "http://127.0.0.2:8/cb", "http://127.0.0.1:8/cb?x=1",
])
def test_redirect_uri_must_be_loopback_http_with_port(uri):
    # localhost is refused here, where the file is read: the listener binds 127.0.0.1 or ::1 only
    message = refused({"url": HTTPS, "auth": "oauth", "oauth": {"redirectUri": uri}})
    assert message.startswith(".oauth.redirectUri: ")


@pytest.mark.parametrize("uri", ["http://127.0.0.1:8123/callback", "http://[::1]:5/cb"])
def test_redirect_uri_loopback_accepted(uri):
    assert parse({"url": HTTPS, "auth": "oauth", "oauth": {"redirectUri": uri}}).oauth.redirect_uri == uri


def test_check_url_is_usable_on_its_own():
    assert check_url("https://a.example/") == "https://a.example/"
    with pytest.raises(ValueError, match="http is only allowed on a loopback host") as err:
        check_url(f"http://a.example/{SECRET}")
    assert SECRET not in str(err.value)


# --- ${VAR} interpolation ------------------------------------------------------------------

def test_interpolation_in_every_allowed_field():
    environ = {"BIN": "python3", "ARG": "-v", "TOKEN": SECRET, "DIR": "/srv", "HOST": "api.example.com"}
    stdio = parse({"command": "/usr/bin/${BIN}", "args": ["${ARG}", "x${ARG}y", "$ARG", "${MISSING:-dflt}"],
                   "env": {"T": "${TOKEN}"}, "cwd": "${DIR}/app"}, environ)
    assert stdio.command == "/usr/bin/python3"
    assert stdio.args == ["-v", "x-vy", "$ARG", "dflt"]
    assert stdio.env == {"T": SECRET} and stdio.cwd == "/srv/app"
    http = parse({"url": "https://${HOST}/mcp", "headers": {"X-Key": "k ${TOKEN}"}}, environ)
    assert http.url == "https://api.example.com/mcp" and http.headers == {"X-Key": f"k {SECRET}"}


def test_interpolated_values_are_not_expanded_again_and_empty_is_set():
    assert parse({"command": "${A}"}, {"A": "${B}", "B": "no"}).command == "${B}"
    assert parse({"command": "x", "args": ["${E}"]}, {"E": ""}).args == [""]
    assert parse({"command": "x", "args": ["${E:-d}"]}, {"E": ""}).args == [""]


def test_names_are_not_interpolated():
    assert refused({"url": HTTPS, "auth": "bearer", "bearerTokenEnv": "${T}"}, {"T": "TOKEN"}).startswith(
        ".bearerTokenEnv: must be an environment variable name")
    assert parse({"command": "x", "env": {"K": "v"}, "disabled": False}, {"K": "z"}).env == {"K": "v"}


@pytest.mark.parametrize(("entry", "field"), [
    ({"command": "${NOPE}"}, "command"),
    ({"command": "x", "args": ["ok", "--key=${NOPE}"]}, "args.1"),
    ({"command": "x", "env": {"K": "${NOPE}"}}, "env.K"),
    ({"command": "x", "cwd": "${NOPE}/x"}, "cwd"),
    ({"url": "https://${NOPE}/mcp"}, "url"),
    ({"url": HTTPS, "headers": {"Authorization": "Bearer ${NOPE}"}}, "headers.Authorization"),
])
def test_missing_variable_names_the_variable_and_field(entry, field):
    assert refused(entry, {"OTHER": SECRET}) == f".{field}: environment variable NOPE is not set"


@pytest.mark.parametrize(("value", "problem"), [
    ("${}", "invalid ${…} reference"), ("${1X}", "invalid ${…} reference"), ("${A-B}", "invalid ${…} reference"),
    ("${A:=x}", "invalid ${…} reference"), ("${A", "unterminated ${ reference"), ("x${", "unterminated ${ reference"),
])
def test_malformed_references_are_refused(value, problem):
    assert problem in refused({"command": "x", "env": {"K": value}}, {"A": SECRET})


def test_interpolated_url_is_checked_after_expansion():
    environ = {"U": f"http://u:{SECRET}@evil.example/", "H": "evil.example"}
    assert refused({"url": "${U}"}, environ) == ".url: URL must not contain userinfo (user:password@)"
    assert refused({"url": "http://${H}/mcp"}, environ).startswith(".url: http is only allowed on a loopback host")


def test_interpolated_header_value_is_checked_without_echo():
    message = refused({"url": HTTPS, "headers": {"X-Key": "${V}"}}, {"V": f"{SECRET}\r\nHost: evil"})
    assert message == ".headers.X-Key: header value must not contain CR or LF"


# --- "!command" secrets ------------------------------------------------------------------

@pytest.mark.parametrize(("entry", "field"), [
    ({"command": "x", "env": {"TOKEN": f"!pass show {SECRET}"}}, "env.TOKEN"),
    ({"url": HTTPS, "headers": {"Authorization": f"!op read {SECRET}"}}, "headers.Authorization"),
    ({"command": f"!{SECRET}"}, "command"),
    ({"command": "x", "cwd": "!pwd"}, "cwd"),
    ({"url": f"!curl {SECRET}"}, "url"),
])
def test_bang_command_secrets_are_refused(entry, field):
    assert refused(entry) == (f'.{field}: a value starting with "!" (a shell-evaluated secret) is not supported; '
                              "use ${VAR} or an env-named credential")


def test_bang_is_plain_data_in_args_and_inside_values_and_variables():
    server = parse({"command": "x", "args": ["!*.log"], "env": {"A": "a!b", "B": "${B}"}}, {"B": "!from-env"})
    assert server.args == ["!*.log"] and server.env == {"A": "a!b", "B": "!from-env"}


# --- properties --------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
keys = st.sampled_from(["command", "url", "args", "env", "cwd", "headers", "auth", "bearerTokenEnv", "oauth",
                        "protocolVersion", "requestTimeoutMs", "toolTimeoutMs", "tasks", "disabled", "type",
                        "grantType", "clientId", "clientSecretEnv", "issuer", "clientMetadataUrl", "redirectUri",
                        "scope", "roots", "clientAssertion", "keyEnv", "alg", "kid"])
entries = st.dictionaries(keys, json_values | st.dictionaries(keys, json_values, max_size=5), max_size=8)


@settings(max_examples=400, deadline=None)
@given(entries, st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3))
def test_arbitrary_entries_parse_or_raise_config_error(entry, environ):
    try:
        server = parse(entry, environ)
    except ConfigError as err:
        assert str(err).startswith(f"{SRC}: mcpServers.s")
    else:
        assert isinstance(server, (StdioServer, HttpServer))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | json_values.map(json.dumps) | json_values.map(lambda v: json.dumps({"mcpServers": v})))
def test_arbitrary_documents_never_crash_the_loader(text):
    try:
        parse_document(text, SRC, {})
    except ConfigError as err:
        assert str(err).startswith(f"{SRC}: ")


secrets = st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1, max_size=30).map(
    lambda s: f"S3CR3T{s}")


@settings(max_examples=300, deadline=None)
@given(secrets, st.sampled_from([
    lambda v: {"command": "x", "env": {"K": v}, "disabled": "no"},
    lambda v: {"command": "x", "env": {"K": v}, "bogus": v},
    lambda v: {"url": HTTPS, "headers": {"A": v}, "auth": "bearer"},
    lambda v: {"url": HTTPS, "headers": {"A": v + "\n"}},
    lambda v: {"url": "http://evil.example/" + v},
    lambda v: {"url": "https://u:" + v + "@x.example/"},
    lambda v: {"command": v, "url": v},
    lambda v: {"command": "x", "args": [v, 1]},
    lambda v: {"command": "x", "env": {"K": "${V}"}, "requestTimeoutMs": v},
    lambda v: {"command": "x", "env": {"K": "!" + v}},
    lambda v: {"command": "x", "cwd": "${" + v},
]))
def test_no_error_message_contains_a_secret_value(secret, make_entry):
    with pytest.raises(ConfigError) as err:
        parse(make_entry(secret), {"V": secret})
    assert secret not in str(err.value)


@pytest.mark.parametrize("char", ["\u0085", "\u00a0", "\u2028", "\u009b", "\u200b\u2028"])
def test_urls_with_unicode_spaces_or_c1_controls_are_refused(char):
    assert "must not contain whitespace" in refused({"url": f"https://mcp.example.com/{char}{SECRET}"})
