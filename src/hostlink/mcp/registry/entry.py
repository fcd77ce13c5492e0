"""A `server.json` as a `mcpServers` entry: one package or remote, its inputs filled in.

The command is an argv (never a shell): the runtime its registry type or `runtimeHint` names,
the package at its exact version, then `runtimeArguments` and `packageArguments` (positional
and named, `isRepeated`, `{var}` values, defaults) and `environmentVariables`. A remote is its
URL with the variables filled in and its headers. Text from the registry that would reach a
command line may not carry what a shell or `${VAR}` expansion would act on (a runtime such as
`npx` is a batch file on Windows, run by cmd.exe): such a record is refused, not escaped. A
secret input is never a value: it becomes a `${VAR}` reference, and the variable is reported
so the person can set it in the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hostlink.host import text_problem
from hostlink.host.output import one_line
from hostlink.mcp.config.rules import ENV_NAME_PATTERN
from hostlink.mcp.config.schema import check_url
from hostlink.mcp.registry.bundle import bundle_command, install_bundle
from hostlink.mcp.registry.client import RegistryError
from hostlink.mcp.registry.records import items
from hostlink.mcp.registry.text import MAX_TEXT, registry_text

# The default order when a server offers several ways to run: a package runs locally without
# an account, npm and PyPI need only their runtime; a container needs docker; then NuGet; an
# MCPB bundle is a download; a remote sends your data to someone else's server.
ORDER = ("npm", "pypi", "oci", "nuget", "mcpb", "remote")
# Runtimes by registry type: the hints accepted for it, and how each names the exact package.
RUNTIMES: dict[str, dict[str, Callable[[str, str], list[str]]]] = {
    "npm": {"npx": lambda p, v: ["-y", f"{p}@{v}"]},
    "pypi": {"uvx": lambda p, v: [f"{p}=={v}"]},
    "oci": {"docker": lambda p, v: [p if _tagged(p) else f"{p}:{v}"]},
    "nuget": {"dnx": lambda p, v: [f"{p}@{v}", "--yes"]},
}
IDENTIFIERS = {
    "npm": re.compile(r"(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*"),
    "pypi": re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"),
    "oci": re.compile(r"[a-z0-9][a-z0-9._-]*(?::[0-9]+)?(?:/[a-z0-9][a-z0-9._-]*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]*)?"),
    "nuget": re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*"),
}
EXACT_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]*")
RANGE_PARTS = {"x", "X", "*"}
OPTION = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_.-]*")
VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
FORMATS = ("string", "number", "boolean", "filepath")
MAX_VALUES = 32

class InputError(RegistryError):
    """An input is missing or refused: the person's to fix, not the registry's."""


Ask = Callable[[str, str, tuple[str, ...]], str | None]  # key, what it is, choices -> the value (None: none)


@dataclass
class Built:
    """The entry, the variables the person must set (secret inputs), and the kind chosen."""

    entry: dict[str, Any]
    kind: str
    secrets: list[str] = field(default_factory=list)


def choose(server: dict[str, Any], wanted: str | None) -> tuple[str, dict[str, Any]]:
    """The package or remote to use: the one of kind `wanted`, else the first in ORDER."""
    offers: dict[str, dict[str, Any]] = {}
    for package in items(server, "packages"):
        kind = package.get("registryType") if isinstance(package, dict) else None
        if isinstance(kind, str) and kind.lower() in ORDER:
            offers.setdefault(kind.lower(), package)
    for remote in items(server, "remotes"):
        if isinstance(remote, dict) and remote.get("type") == "streamable-http":
            offers.setdefault("remote", remote)
    if wanted is not None:
        if wanted not in offers:
            raise RegistryError(f"the server offers no {wanted} package; it offers: {', '.join(offers) or 'none'}")
        return wanted, offers[wanted]
    for kind in ORDER:
        if kind in offers:
            return kind, offers[kind]
    raise RegistryError("the server offers no package or Streamable HTTP remote hostlink can run")


class Builder:
    """Fills one entry's inputs from `given` (`--input KEY=VALUE`, each key a list), else
    `ask` (a terminal), else the default; secret inputs become `${VAR}` references."""

    def __init__(self, entry_name: str, given: dict[str, list[str]], ask: Ask | None,
                 environ: Mapping[str, str]) -> None:
        self.entry_name, self.given, self.ask, self.environ = entry_name, given, ask, environ
        self.used: set[str] = set()
        self.secrets: list[str] = []
        self.argv = False  # whether what is being filled in goes on the command line

    def package(self, kind: str, package: dict[str, Any]) -> dict[str, Any]:
        where = f"packages ({kind})"
        if kind == "mcpb":
            return self._bundle(package, where)
        identifier = registry_text(package.get("identifier"), f"{where}.identifier", argv=True)
        if not IDENTIFIERS[kind].fullmatch(identifier):
            raise RegistryError(f"{where}.identifier is not a valid {kind} package name")
        version = _exact_version(package.get("version"), kind, identifier, where)
        hint = package.get("runtimeHint")
        runtime = RUNTIMES[kind]
        command = hint if hint is not None else next(iter(runtime))
        if command not in runtime:
            raise RegistryError(f"{where}.runtimeHint names a runtime hostlink does not run for {kind} packages "
                                f"(it runs {', '.join(runtime)})")
        transport = package.get("transport")
        if isinstance(transport, dict) and transport.get("type", "stdio") != "stdio":
            raise RegistryError(f"{where}: only a stdio package can be added; this one serves HTTP itself")
        env = self._key_values(package.get("environmentVariables"), f"{where}.environmentVariables", env=True)
        args = self._arguments(package.get("runtimeArguments"), f"{where}.runtimeArguments")
        if kind == "oci":
            args = ["run", "-i", "--rm", *args, *[part for name in env for part in ("-e", name)]]
        args += runtime[command](identifier, version)
        args += self._arguments(package.get("packageArguments"), f"{where}.packageArguments")
        entry: dict[str, Any] = {"command": command, "args": args}
        if env:
            entry["env"] = env
        return entry

    def _bundle(self, package: dict[str, Any], where: str) -> dict[str, Any]:
        url = registry_text(package.get("identifier"), f"{where}.identifier")
        try:
            check_url(url)
        except ValueError as problem:
            raise RegistryError(f"{where}.identifier is refused: {problem}") from None
        sha256 = package.get("fileSha256")
        entry = bundle_command(install_bundle(url, sha256 if isinstance(sha256, str) else "", self.environ))
        env = self._key_values(package.get("environmentVariables"), f"{where}.environmentVariables", env=True)
        if env:
            entry["env"] = {**entry.get("env", {}), **env}
        return entry

    def remote(self, remote: dict[str, Any]) -> dict[str, Any]:
        where = "remotes (streamable-http)"
        url = self._fill(registry_text(remote.get("url"), f"{where}.url"),
                         _mapping(remote.get("variables"), f"{where}.variables"), f"{where}.url", secret=False)
        if "${" not in url:
            try:
                check_url(url)
            except ValueError as problem:
                raise RegistryError(f"{where}.url is refused: {problem}") from None
        entry: dict[str, Any] = {"url": url}
        headers = self._key_values(remote.get("headers"), f"{where}.headers", env=False)
        if headers:
            entry["headers"] = headers
        return entry

    def unused(self) -> list[str]:
        return [key for key in self.given if key not in self.used]

    def _arguments(self, specs: Any, where: str) -> list[str]:
        self.argv = True
        try:
            return self._argv(specs, where)
        finally:
            self.argv = False

    def _argv(self, specs: Any, where: str) -> list[str]:
        argv: list[str] = []
        for index, spec in enumerate(_list(specs, where)):
            at = f"{where}[{index}]"
            if not isinstance(spec, dict) or spec.get("type") not in ("positional", "named"):
                raise RegistryError(f"{at} must be an object of type positional or named")
            if spec["type"] == "positional":
                key = registry_text(spec.get("valueHint") or spec.get("name") or f"argument{index + 1}", at,
                                     argv=True)
                argv += self._values(key, spec, at)
                continue
            flag = registry_text(spec.get("name"), f"{at}.name", argv=True)
            if not OPTION.fullmatch(flag):
                raise RegistryError(f"{at}.name must be an option name such as --port")
            takes_value = any(k in spec for k in ("value", "default", "valueHint", "isRequired", "choices"))
            if not takes_value:
                argv.append(flag)  # a switch
                continue
            argv += [part for value in self._values(flag.lstrip("-"), spec, at) for part in (flag, value)]
        return argv

    def _key_values(self, specs: Any, where: str, *, env: bool) -> dict[str, str]:
        found: dict[str, str] = {}
        for index, spec in enumerate(_list(specs, where)):
            at = f"{where}[{index}]"
            if not isinstance(spec, dict):
                raise RegistryError(f"{at} must be an object")
            name = registry_text(spec.get("name"), f"{at}.name")
            if env and not ENV_NAME_PATTERN.fullmatch(name):
                raise RegistryError(f"{at}.name is not an environment variable name")
            values = self._values(name, spec, at, reference=name if env else None)
            if len(values) > 1:
                raise RegistryError(f"{at}: {name} takes one value")
            if values:
                found[name] = values[0]
        return found

    def _values(self, key: str, spec: dict[str, Any], where: str, reference: str | None = None) -> list[str]:
        """The values of one input (none: it is left out)."""
        variables = _mapping(spec.get("variables"), f"{where}.variables")
        secret = spec.get("isSecret") is True
        if "value" in spec:
            return [self._fill(registry_text(spec["value"], f"{where}.value", argv=self.argv), variables, where,
                               secret)]
        if secret:
            return [self._secret(key, reference)]
        values = self._asked(key, spec, where)
        if len(values) > 1 and spec.get("isRepeated") is not True:
            raise InputError(f"--input {key} is given more than once, but takes one value")
        return values

    def _asked(self, key: str, spec: dict[str, Any], where: str) -> list[str]:
        choices = tuple(registry_text(choice, f"{where}.choices", argv=self.argv)
                        for choice in _list(spec.get("choices"), where))
        default = spec.get("default")
        if key in self.given:
            self.used.add(key)
            values = self.given[key]
        elif spec.get("isRequired") is True and default is None and self.ask is not None:
            answer = self.ask(key, one_line(spec.get("description") if isinstance(spec.get("description"), str)
                                            else "", 200), choices)
            values = [answer] if answer else []
        elif default is not None:
            values = [registry_text(default, f"{where}.default", argv=self.argv)]
        else:
            values = []
        if not values and spec.get("isRequired") is True:
            raise InputError(f"the input {key} is required: give --input {key}=VALUE")
        for value in values:
            _check_value(key, value, spec.get("format", "string"), choices)
        return values[:MAX_VALUES]

    def _fill(self, template: str, variables: dict[str, Any], where: str, secret: bool) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            spec = variables.get(name)
            if not isinstance(spec, dict):
                raise RegistryError(f"{where} uses {{{name}}}, which it does not define")
            if secret or spec.get("isSecret") is True:
                return self._secret(name, None)
            values = self._asked(name, spec, f"{where}.variables.{name}")
            if len(values) != 1:
                raise InputError(f"the input {name} needs one value: give --input {name}=VALUE")
            return values[0]

        return VARIABLE.sub(one, template)

    def _secret(self, key: str, reference: str | None) -> str:
        if key in self.given:
            raise InputError(f"the input {key} is a secret, which hostlink never writes to a file: "
                                "leave out --input and set it in the environment instead")
        variable = reference or re.sub(r"[^A-Z0-9]+", "_", f"{self.entry_name}_{key}".upper()).strip("_")
        if variable not in self.secrets:
            self.secrets.append(variable)
        return f"${{{variable}}}"


def build_entry(entry_name: str, server: dict[str, Any], wanted: str | None, given: dict[str, list[str]],
                ask: Ask | None, environ: Mapping[str, str]) -> Built:
    """The entry for `server` (its provenance added by the caller), refusing what cannot be run
    safely; an MCPB bundle is installed (verified) under `environ`'s state home."""
    kind, offer = choose(server, wanted)
    builder = Builder(entry_name, given, ask, environ)
    entry = builder.remote(offer) if kind == "remote" else builder.package(kind, offer)
    unused = builder.unused()
    if unused:
        raise InputError(f"--input {unused[0]} is not an input of this server's {kind} entry")
    return Built(entry, kind, builder.secrets)


def _tagged(image: str) -> bool:
    return ":" in image.rsplit("/", 1)[-1]


def _exact_version(value: Any, kind: str, identifier: str, where: str) -> str:
    if kind == "oci" and value is None and _tagged(identifier):
        return ""
    version = registry_text(value, f"{where}.version", argv=True)
    if (not EXACT_VERSION.fullmatch(version) or version.lower() == "latest"
            or RANGE_PARTS & set(re.split(r"[.+-]", version))):
        raise RegistryError(f"{where}.version is not one exact version (a range or a tag such as latest "
                            "would run whatever is newest)")
    return version


def _check_value(key: str, value: str, kind: Any, choices: tuple[str, ...]) -> None:
    problem = text_problem(value)
    if problem is not None or len(value) > MAX_TEXT:
        raise InputError(f"the input {key} must not contain {problem or 'more than 1000 characters'}")
    if choices and value not in choices:
        raise InputError(f"the input {key} must be one of: {', '.join(choices)}")
    if kind == "number":
        try:
            float(value)
        except ValueError:
            raise InputError(f"the input {key} must be a number") from None
    elif kind == "boolean" and value not in ("true", "false"):
        raise InputError(f"the input {key} must be true or false")
    elif kind not in FORMATS:
        raise RegistryError(f"the input {key} has an unknown format")


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 64:
        raise RegistryError(f"{where} must be a list of at most 64 items")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > 64:
        raise RegistryError(f"{where} must be an object of at most 64 inputs")
    return value
