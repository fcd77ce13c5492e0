"""``hostlink claude-code …``: diagnostics for the Claude Code provider.

Importing this module stays cheap (click only); the doctor and its process layer load when
the command runs.
"""

from __future__ import annotations

import click


@click.group(name="claude-code")
def claude_code_group() -> None:
    """The Claude Code provider: doctor and diagnostics."""


@claude_code_group.command()
@click.option("--report", is_flag=True, help="Also write a content-free JSON report to a private file.")
def doctor(report: bool) -> None:
    """Check that the Claude Code provider can run here.

    The claude CLI on PATH and its version, its sign-in, the platform, a timed proposal
    server round trip and the last request's metrics. Exit status 1 when a required check
    fails.
    """
    import anyio

    from hostlink.claude_code.doctor import diagnose, write_report

    diagnosis = anyio.run(diagnose)
    click.echo(diagnosis.text())
    if report:
        click.echo(f"report: {write_report(diagnosis)}")
    if not diagnosis.ok:
        raise SystemExit(1)
