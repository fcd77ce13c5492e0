"""`hostlink claude-code …`: diagnostics for the Claude Code provider, and the plan's usage.

Importing this module stays cheap (click only); the doctor and its process layer load when
the command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from hostlink.claude_code import ClaudeCodeExtension


@click.group(name="claude-code")
def claude_code_group() -> None:
    """The Claude Code provider: doctor, diagnostics and the plan's usage."""


@claude_code_group.command()
@click.option("--report", is_flag=True, help="Also write a content-free JSON report to a private file.")
def doctor(report: bool) -> None:
    """Check that the Claude Code provider can run here.

    The claude CLI on PATH and its version, its sign-in, the platform, a timed proposal
    server round trip and the last request's metrics. Exit status 1 when a required check
    fails.
    """
    import anyio

    from hostlink.claude_code import diagnose, write_report

    diagnosis = anyio.run(diagnose)
    click.echo(diagnosis.text())
    if report:
        click.echo(f"report: {write_report(diagnosis)}")
    if not diagnosis.ok:
        raise SystemExit(1)


PROBE_MODEL = "haiku"


@claude_code_group.command()
@click.option("--json", "as_json", is_flag=True, help="The same facts as JSON on stdout.")
@click.option("--probe", is_flag=True, help=f"First make one minimal request ({PROBE_MODEL}) to get a fresh report.")
def usage(as_json: bool, probe: bool) -> None:
    """The Claude plan's usage as the last request reported it.

    Each window (5-hour, 7-day, …) with the share used and its reset in local time, how long
    ago that was seen, whether requests draw on extra usage, and the extra-usage guard
    (HOSTLINK_CLAUDE_EXTRA_USAGE). Makes no request of its own unless --probe.
    """
    from hostlink.claude_code import ClaudeCodeExtension

    show_usage(ClaudeCodeExtension, as_json=as_json, probe=probe)


def show_usage(make_extension: Callable[[], ClaudeCodeExtension], *, as_json: bool, probe: bool) -> None:
    """`usage` with the extension `make_extension()` gives (tests pass a fake API's)."""
    from hostlink.claude_code import ExtraUsageSettingError, describe_usage, usage_as_json
    from hostlink.cli.session import Fail

    extension = make_extension()
    try:
        mode = extension.guard.mode()
    except ExtraUsageSettingError as error:
        raise Fail(str(error)) from None
    if probe:
        click.echo(f"probing: one minimal request to Claude ({PROBE_MODEL}) to read the plan's usage…", err=True)
        _probe(extension)
    latest = extension.guard.latest()
    if as_json:
        from hostlink.host.output import compact_json

        click.echo(compact_json(usage_as_json(latest, mode)))
    else:
        click.echo(describe_usage(latest, mode))


def _probe(extension: ClaudeCodeExtension) -> None:
    from hostlink.cli.session import Fail, run_session
    from hostlink.host import CancelSignal, Context, ErrorEvent, TextContent, UserMessage
    from hostlink.host.session import HostSession

    async def work(host: HostSession) -> ErrorEvent | None:
        provider = host.registry.providers["claude-code"]
        model = provider.model(PROBE_MODEL)
        assert model is not None
        if provider.unavailable:
            return ErrorEvent(provider.unavailable)
        context = Context("Answer with the single word: ok.", [UserMessage([TextContent("ok")])])
        outcome = None
        async for event in host.stream("claude-code", model, context, CancelSignal()):
            if isinstance(event, ErrorEvent):
                outcome = event
        return outcome

    error = run_session([extension], work)
    if error is not None:
        raise Fail(f"the probe failed: {error.message}", "request_failed")
