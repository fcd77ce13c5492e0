"""hostlink: an MCP client and a Claude Code provider for Python agent hosts."""


def installed_version() -> str:
    """The installed distribution's version, as the MCP handshakes and `doctor` report it;
    "unknown" for a source tree run without installing."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hostlink")
    except PackageNotFoundError:
        return "unknown"
