"""Strict schema of one MCP server entry (the `mcpServers` format other MCP clients use).

Every model rejects unknown keys and wrong types, and every cross-field rule fails closed.
Messages name the field and the rule, never the value: values may be secrets. Imports only
pydantic and the host API, so reading configuration never pays for `import mcp`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel

from hostlink.host import text_problem
from hostlink.mcp.config.rules import ENV_NAME_PATTERN, SchemaError, safe_key

HEADER_NAME_PATTERN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token
MAX_ARGS = 128
MAX_TOOL_PATTERNS = 256  # of includeTools / excludeTools each


def _clean_text(value: str) -> str:
    """Refuse NUL and lone surrogates: no process argument, env value or header can carry them."""
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(f"must not contain {problem}")
    return value


def _env_name(value: str) -> str:
    if not ENV_NAME_PATTERN.fullmatch(value):
        raise ValueError("must be an environment variable name (letters, digits, _; not starting with a digit)")
    return value


def _header_name(value: str) -> str:
    if not HEADER_NAME_PATTERN.fullmatch(value):
        raise ValueError("must be an HTTP header name token")
    return value


def _header_value(value: str) -> str:
    if "\r" in value or "\n" in value:
        raise ValueError("header value must not contain CR or LF")
    return value


Text = Annotated[str, AfterValidator(_clean_text)]
# The JSON Schema (mcp.schema.json) shows the patterns these validators check.
EnvName = Annotated[str, AfterValidator(_env_name),
                    WithJsonSchema({"type": "string", "pattern": ENV_NAME_PATTERN.pattern})]
HeaderName = Annotated[str, AfterValidator(_header_name),
                       WithJsonSchema({"type": "string", "pattern": HEADER_NAME_PATTERN.pattern})]
HeaderValue = Annotated[str, AfterValidator(_clean_text), AfterValidator(_header_value)]


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or `localhost` — written exactly so (no `127.1` shorthands)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(value: str, *, loopback_only: bool = False) -> str:
    """Refuse unsafe URLs: https only (http only on loopback), no userinfo, no fragment.

    `loopback_only` is for redirect URIs, which hostlink's own loopback receiver answers.
    Raises ValueError with a message that never contains the URL (it may carry a token).
    """
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in value):
        raise ValueError("URL must not contain whitespace, control characters or backslashes")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise ValueError("URL scheme must be https (or http on a loopback host)")
    if "@" in parts.netloc:
        raise ValueError("URL must not contain userinfo (user:password@)")
    if "#" in value:
        raise ValueError("URL must not contain a fragment (#…)")
    host = parts.hostname or ""
    if not host:
        raise ValueError("URL must name a host")
    if loopback_only:
        if scheme != "http" or not is_loopback_host(host) or port is None:
            raise ValueError("must be an http URL on a loopback host with an explicit port "
                             "(127.0.0.0/8, [::1] or localhost)")
    elif scheme == "http" and not is_loopback_host(host):
        raise ValueError("http is only allowed on a loopback host (127.0.0.0/8, [::1], localhost); use https")
    return value


def _loopback_url(value: str) -> str:
    check_url(value, loopback_only=True)
    parts = urlsplit(value)
    if parts.hostname not in ("127.0.0.1", "::1") or parts.query:
        raise ValueError("must be http://127.0.0.1:PORT/PATH or http://[::1]:PORT/PATH without a query: "
                         "the callback listener binds those addresses, not a name such as localhost")
    return value


def _issuer(value: str) -> str:
    check_url(value)
    if "?" in value:
        raise ValueError("issuer must not contain a query")
    return value


Url = Annotated[str, AfterValidator(check_url)]
LoopbackUrl = Annotated[str, AfterValidator(_loopback_url)]
IssuerUrl = Annotated[str, AfterValidator(_issuer)]


class _Strict(BaseModel):
    """Frozen, strict, unknown keys refused; camelCase aliases are the config keys."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True,
        alias_generator=to_camel, validate_by_alias=True, validate_by_name=True,
        use_attribute_docstrings=True,  # each field's docstring is its description in mcp.schema.json
    )


class ClientAssertion(_Strict):
    """private_key_jwt (RFC 7523): the PEM private key comes from `keyEnv` at connect time."""

    key_env: EnvName
    """The environment variable holding the PEM private key (unencrypted), read at connect time."""
    alg: Literal["RS256", "ES256"]
    """The signing algorithm: RS256 (an RSA key of at least 2048 bits) or ES256 (a P-256 key)."""
    kid: Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_clean_text)] | None = None
    """The key id the authorization server knows the key by (the assertion's `kid` header)."""


class OAuthSettings(_Strict):
    """OAuth settings of an HTTP server with `auth: "oauth"`."""

    grant_type: Literal["authorization_code", "client_credentials"] = "authorization_code"
    """`authorization_code`: a person signs in through a link; `client_credentials`: a machine
    client, no person, tokens in memory only."""
    client_id: Text | None = None
    """A pre-registered client id (otherwise the client registers itself where the server allows it)."""
    client_secret_env: EnvName | None = None
    """The environment variable holding the client secret, read at connect time."""
    issuer: IssuerUrl | None = None
    """The authorization server's exact issuer URL (required for `client_credentials`)."""
    client_metadata_url: Url | None = None
    """An https URL of a client metadata document that serves as the client id."""
    redirect_uri: LoopbackUrl | None = None
    """Where the browser returns after sign-in: `http://127.0.0.1:PORT/PATH` or `http://[::1]:PORT/PATH`."""
    scope: Text | None = None
    """The scopes to ask for, space-separated."""
    client_assertion: ClientAssertion | None = None
    """Authenticate a `client_credentials` client with a signed JWT instead of a secret."""

    @model_validator(mode="after")
    def _grant_rules(self) -> OAuthSettings:
        if self.grant_type == "client_credentials":
            if self.client_secret_env is not None and self.client_assertion is not None:
                raise ValueError("clientSecretEnv and clientAssertion are mutually exclusive "
                                 "(the client authenticates with a secret or with a signed assertion)")
            credential = self.client_secret_env or self.client_assertion
            missing = [key for key, value in (("clientId", self.client_id),
                                              ("clientSecretEnv (or clientAssertion)", credential),
                                              ("issuer", self.issuer)) if value is None]
            if missing:
                raise ValueError(f'grantType "client_credentials" requires {", ".join(missing)}')
            for key, value in (("redirectUri", self.redirect_uri),
                               ("clientMetadataUrl", self.client_metadata_url)):
                if value is not None:
                    raise ValueError(f'{key} is not allowed with grantType "client_credentials" (no redirect)')
        else:
            if self.client_assertion is not None:
                raise ValueError('clientAssertion is only allowed with grantType "client_credentials"')
            if self.client_id is not None and self.client_metadata_url is not None:
                raise ValueError("clientId and clientMetadataUrl are mutually exclusive "
                                 "(with clientMetadataUrl the URL is the client id)")
            if self.client_secret_env is not None and self.client_id is None:
                raise ValueError("clientSecretEnv requires clientId")
        return self


ToolPattern = Annotated[Text, Field(min_length=1, max_length=200)]
MAX_SAMPLING_TOKENS = 32000


class SamplingSettings(_Strict):
    """The server may ask for a model answer (MCP sampling): `model` is a model of the host
    (`claude-code/haiku`), `max_tokens` the most any one answer may take."""

    model: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.:-]+$", max_length=200)]
    """The host's model that answers, e.g. `claude-code/haiku` (the server's preferences are ignored)."""
    max_tokens: int = Field(1000, ge=1, le=MAX_SAMPLING_TOKENS)
    """The most tokens one answer may take."""


class RegistrySource(_Strict):
    """Where `hostlink mcp add --from-registry` took the entry from; a later add from the same
    registry and server updates it."""

    registry: Url
    """The registry's base URL."""
    name: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_clean_text)]
    """The server's name in the registry."""
    version: Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_clean_text)]
    """The version of its `server.json` the entry was built from."""


class _Common(_Strict):
    protocol_version: Literal["auto", "legacy", "2026-07-28"] = "auto"
    """`auto` tries the 2026-07-28 protocol and falls back to the handshake; `legacy` forces
    the handshake; `2026-07-28` refuses a server that does not speak it."""
    request_timeout_ms: int = Field(15000, ge=100, le=300000)
    """How long the setup, and each request other than a tool call, may take, in milliseconds."""
    tool_timeout_ms: int = Field(60000, ge=100, le=3600000)
    """How long a tool call may go without an answer or a progress notification, in milliseconds;
    with `tasks`, how long a call waits for its task before the model gets a handle to check later."""
    disabled: bool = False
    """Keep the entry but never start or expand it."""
    roots: bool = False
    """Offer the trusted project's working directory as the server's one root."""
    include_tools: list[ToolPattern] | None = Field(None, max_length=MAX_TOOL_PATTERNS)
    """When given, only the tools matching one of these exact names or globs exist."""
    exclude_tools: list[ToolPattern] = Field(default_factory=list, max_length=MAX_TOOL_PATTERNS)
    """The tools matching one of these exact names or globs do not exist."""
    elicitation: bool = False
    """The server may ask the person questions (MCP elicitation, form mode), when the host can ask."""
    sampling: SamplingSettings | None = None
    """The server may ask the host's model for answers, each one approved by the person (MCP sampling)."""
    tasks: bool = False
    """The server may run a tool call as a task (the 2026-07-28 tasks extension): a call that outlives
    `toolTimeoutMs` leaves a handle to check later instead of failing; tools that require a task work."""
    cache_tools: bool = False
    """Keep the tool listing in a private cache so a search needs no server start."""
    from_registry: RegistrySource | None = None
    """Set by `hostlink mcp add --from-registry`: the registry, server and version it came from."""


class StdioServer(_Common):
    """A server started as a child process speaking MCP over stdio (trusted executable code)."""

    transport: ClassVar[Literal["stdio"]] = "stdio"
    command: Text = Field(min_length=1)
    """The program to start (found on `PATH`); `${VAR}` expands."""
    args: list[Text] = Field(default_factory=list, max_length=MAX_ARGS)
    """Its arguments, passed as they are (no shell); `${VAR}` expands."""
    env: dict[EnvName, Text] = Field(default_factory=dict, repr=False)  # values may be secrets
    """Variables for the server, beside HOME, PATH, SHELL and TERM (it inherits nothing else)."""
    cwd: Text | None = None
    """The directory to start it in; `${VAR}` expands."""
    _written: str | None = PrivateAttr(default=None)  # ``command`` before ${VAR} expansion

    @property
    def written_command(self) -> str:
        """`command` as the file wrote it, for messages: a ${VAR} there stays a reference."""
        return self._written if self._written is not None else self.command

    def as_written(self, command: str) -> StdioServer:
        self._written = command
        return self


class HttpServer(_Common):
    """A Streamable HTTP server."""

    transport: ClassVar[Literal["http"]] = "http"
    url: Url
    """The Streamable HTTP endpoint: https (http only on a loopback host), no userinfo or fragment."""
    headers: dict[HeaderName, HeaderValue] = Field(default_factory=dict, repr=False)  # may be secrets
    """Extra HTTP headers sent with every request; `${VAR}` expands in values."""
    auth: Literal["oauth", "bearer"] | None = None
    """`bearer`: a token from `bearerTokenEnv`; `oauth`: OAuth, sign-in by link unless `oauth`
    says otherwise."""
    bearer_token_env: EnvName | None = None
    """The environment variable holding the bearer token, read at connect time."""
    oauth: OAuthSettings | None = None
    """OAuth settings (with `auth: "oauth"`)."""

    def env_credential_state(self, environ: Mapping[str, str]) -> str | None:
        """`env set: VAR` / `env missing: VAR` for a credential from the environment (bearer
        token, client secret or private key); None without one (no auth, or a sign-in by link,
        whose state is in the keyring). Status needs no keyring and no session for these."""
        settings = self.oauth or OAuthSettings()
        if self.auth == "bearer":
            variable = self.bearer_token_env
        elif self.auth == "oauth" and settings.grant_type == "client_credentials":
            variable = settings.client_assertion.key_env if settings.client_assertion else settings.client_secret_env
        else:
            return None
        return f"env {'set' if environ.get(variable or '') else 'missing'}: {variable}"

    @model_validator(mode="after")
    def _auth_rules(self) -> HttpServer:
        if self.auth == "bearer" and self.bearer_token_env is None:
            raise ValueError('bearerTokenEnv is required when auth is "bearer"')
        if self.bearer_token_env is not None and self.auth != "bearer":
            raise ValueError('bearerTokenEnv is only allowed when auth is "bearer"')
        if self.oauth is not None and self.auth != "oauth":
            raise ValueError('oauth is only allowed when auth is "oauth"')
        if self.auth is not None and any(k.lower() == "authorization" for k in self.headers):
            raise ValueError("headers.Authorization is not allowed together with auth "
                             "(hostlink sets the Authorization header)")
        return self


ServerConfig = StdioServer | HttpServer


def _own_keys(model: type[_Common]) -> frozenset[str]:
    return frozenset(f.alias or n for n, f in model.model_fields.items() if n not in _Common.model_fields)


_KIND_KEYS = {StdioServer: _own_keys(StdioServer), HttpServer: _own_keys(HttpServer)}
# The optional "type" key other clients write; validated against command/url, then dropped.
TYPE_HINTS = {"stdio": StdioServer, "http": HttpServer, "streamable-http": HttpServer}


def parse_server(data: Any) -> ServerConfig:
    """Validate one raw server entry (already interpolated) into a StdioServer or HttpServer.

    Raises SchemaError naming the first offending field (config key path) and the rule.
    """
    if not isinstance(data, dict):
        raise SchemaError("", "a server entry must be a JSON object")
    data = dict(data)
    has_command, has_url = "command" in data, "url" in data
    if has_command == has_url:
        raise SchemaError("", 'exactly one of "command" (stdio) or "url" (Streamable HTTP) is required')
    model = StdioServer if has_command else HttpServer
    if "type" in data:
        hint = data.pop("type")
        if hint == "sse":
            raise SchemaError("type", '"sse" (the deprecated HTTP+SSE transport) is not supported; '
                                      'use a Streamable HTTP url')
        if not isinstance(hint, str) or hint not in TYPE_HINTS:
            raise SchemaError("type", 'must be "stdio", "http" or "streamable-http"')
        if TYPE_HINTS[hint] is not model:
            raise SchemaError("type", f'"{hint}" does not match '
                                      f'{"command" if has_command else "url"}')
    try:
        return model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise _schema_error(model, exc) from None


def _schema_error(model: type[_Common], exc: ValidationError) -> SchemaError:
    """The first pydantic error as a SchemaError; `include_input=False` keeps values out."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    err = errors[0]
    field = ".".join(safe_key(part) for part in err["loc"] if part != "[key]")
    problem = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        other = HttpServer if model is StdioServer else StdioServer
        top = str(err["loc"][0])
        if len(err["loc"]) == 1 and top in _KIND_KEYS[other]:
            problem = ("only allowed for a Streamable HTTP server (url)" if other is HttpServer
                       else "only allowed for a stdio server (command)")
        else:
            problem = "unknown field"
    elif err["type"] == "missing":
        problem = "required"
    if len(errors) > 1:
        problem += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return SchemaError(field, problem)
