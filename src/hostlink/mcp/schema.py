"""Strict schema of one MCP server entry (the ``mcpServers`` format other MCP clients use).

Every model rejects unknown keys and wrong types, and every cross-field rule fails closed.
Messages name the field and the rule, never the value: values may be secrets. Imports only
pydantic and the host API, so reading configuration never pays for ``import mcp``.
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
    model_validator,
)
from pydantic.alias_generators import to_camel

from hostlink.host import text_problem
from hostlink.mcp.schema_rules import ENV_NAME_PATTERN, SchemaError, safe_key

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
EnvName = Annotated[str, AfterValidator(_env_name)]
HeaderName = Annotated[str, AfterValidator(_header_name)]
HeaderValue = Annotated[str, AfterValidator(_clean_text), AfterValidator(_header_value)]


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or ``localhost`` — written exactly so (no ``127.1`` shorthands)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(value: str, *, loopback_only: bool = False) -> str:
    """Refuse unsafe URLs: https only (http only on loopback), no userinfo, no fragment.

    ``loopback_only`` is for redirect URIs, which hostlink's own loopback receiver answers.
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
    )


class ClientAssertion(_Strict):
    """private_key_jwt (RFC 7523): the PEM private key comes from ``keyEnv`` at connect time."""

    key_env: EnvName
    alg: Literal["RS256", "ES256"]
    kid: Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_clean_text)] | None = None


class OAuthSettings(_Strict):
    """OAuth settings of an HTTP server with ``auth: "oauth"``."""

    grant_type: Literal["authorization_code", "client_credentials"] = "authorization_code"
    client_id: Text | None = None
    client_secret_env: EnvName | None = None
    issuer: IssuerUrl | None = None
    client_metadata_url: Url | None = None
    redirect_uri: LoopbackUrl | None = None
    scope: Text | None = None
    client_assertion: ClientAssertion | None = None

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
    """The server may ask for a model answer (MCP sampling): ``model`` is a model of the host
    (``claude-code/haiku``), ``max_tokens`` the most any one answer may take."""

    model: Annotated[Text, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.:-]+$", max_length=200)]
    max_tokens: int = Field(1000, ge=1, le=MAX_SAMPLING_TOKENS)


class _Common(_Strict):
    protocol_version: Literal["auto", "legacy", "2026-07-28"] = "auto"
    request_timeout_ms: int = Field(15000, ge=100, le=300000)
    disabled: bool = False
    roots: bool = False  # offer the trusted project's working directory as the one root
    # the tools the model may see and call: exact names or fnmatch globs (the Gemini CLI's keys)
    include_tools: list[ToolPattern] | None = Field(None, max_length=MAX_TOOL_PATTERNS)
    exclude_tools: list[ToolPattern] = Field(default_factory=list, max_length=MAX_TOOL_PATTERNS)
    # the server may ask the person questions (MCP elicitation, form mode), when the host can ask
    elicitation: bool = False
    # the server may ask for a model answer, each one approved by the person (MCP sampling)
    sampling: SamplingSettings | None = None
    # opt-in: keep the tool listing in a private cache so a search needs no server start
    cache_tools: bool = False


class StdioServer(_Common):
    """A server started as a child process speaking MCP over stdio (trusted executable code)."""

    transport: ClassVar[Literal["stdio"]] = "stdio"
    command: Text = Field(min_length=1)
    args: list[Text] = Field(default_factory=list, max_length=MAX_ARGS)
    env: dict[EnvName, Text] = Field(default_factory=dict, repr=False)  # values may be secrets
    cwd: Text | None = None
    _written: str | None = PrivateAttr(default=None)  # ``command`` before ${VAR} expansion

    @property
    def written_command(self) -> str:
        """``command`` as the file wrote it, for messages: a ${VAR} there stays a reference."""
        return self._written if self._written is not None else self.command

    def as_written(self, command: str) -> StdioServer:
        self._written = command
        return self


class HttpServer(_Common):
    """A Streamable HTTP server."""

    transport: ClassVar[Literal["http"]] = "http"
    url: Url
    headers: dict[HeaderName, HeaderValue] = Field(default_factory=dict, repr=False)  # may be secrets
    auth: Literal["oauth", "bearer"] | None = None
    bearer_token_env: EnvName | None = None
    oauth: OAuthSettings | None = None

    def env_credential_state(self, environ: Mapping[str, str]) -> str | None:
        """``env set: VAR`` / ``env missing: VAR`` for a credential from the environment (bearer
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
_TYPE_HINTS = {"stdio": StdioServer, "http": HttpServer, "streamable-http": HttpServer}


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
        if not isinstance(hint, str) or hint not in _TYPE_HINTS:
            raise SchemaError("type", 'must be "stdio", "http" or "streamable-http"')
        if _TYPE_HINTS[hint] is not model:
            raise SchemaError("type", f'"{hint}" does not match '
                                      f'{"command" if has_command else "url"}')
    try:
        return model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise _schema_error(model, exc) from None


def _schema_error(model: type[_Common], exc: ValidationError) -> SchemaError:
    """The first pydantic error as a SchemaError; ``include_input=False`` keeps values out."""
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
