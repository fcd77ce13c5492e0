"""`python serve_host.py FAKE_API_URL SERVE_ARGS…`: `hostlink serve` itself, with the Claude
Code provider pointed at a fake Anthropic API on 127.0.0.1 (the code-only test option; with
`--subscription` signed in by a setup token, so the CLI reports the plan's rate limits;
`--prewarm-idle SECONDS` shortens the prewarmed child's idle bound; `--deadlines SECONDS` sets
each connection's request and write deadlines, 10 s in hostlink; `--trace-file PATH` is the
application's OpenTelemetry SDK, writing each finished span to PATH as one JSON line)."""

from __future__ import annotations

import sys

import click

from hostlink.claude_code import prewarm
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.cli import serve as serve_cli
from hostlink.serve import connections


def main() -> None:
    base_url, *args = sys.argv[1:]
    if "--subscription" in args:
        args.remove("--subscription")
        options = ClaudeTransportOptions(test_api_base_url=base_url, test_oauth_token="sk-ant-oat01-fake-serve")
    else:
        options = ClaudeTransportOptions(test_api_base_url=base_url, test_api_key="sk-fake-serve")
    if "--prewarm-idle" in args:
        at = args.index("--prewarm-idle")
        prewarm.IDLE_SECONDS = float(args[at + 1])
        del args[at : at + 2]
    if "--deadlines" in args:
        at = args.index("--deadlines")
        connections.REQUEST_SECONDS = connections.WRITE_SECONDS = float(args[at + 1])
        del args[at : at + 2]

    @click.command()
    @click.option("--port", type=int, default=0)
    @click.option("--host", "address", default="127.0.0.1")
    @click.option("--max-concurrent", type=int, default=4)
    @click.option("--token-env")
    @click.option("--extra-usage")
    @click.option("--quiet", is_flag=True)
    def command(port: int, address: str, max_concurrent: int, token_env: str | None, extra_usage: str | None,
                quiet: bool) -> None:
        serve_cli.run_server([ClaudeCodeExtension(options=options, extra_usage=extra_usage)], port=port,
                             address=address, max_concurrent=max_concurrent, token_env=token_env,
                             extra_usage=extra_usage, quiet=quiet)

    if "--trace-file" in args:
        at = args.index("--trace-file")
        record_spans(args[at + 1])
        del args[at : at + 2]
    command.main(args, prog_name="hostlink serve")


def record_spans(path: str) -> None:
    """The OpenTelemetry SDK as an application configures it, exporting to a file of JSON lines."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
        out=out, formatter=lambda span: span.to_json(indent=None) + "\n")))
    trace.set_tracer_provider(provider)


if __name__ == "__main__":
    main()
