"""``python serve_host.py FAKE_API_URL SERVE_ARGS…``: ``hostlink serve`` itself, with the Claude
Code provider pointed at a fake Anthropic API on 127.0.0.1 (the code-only test option)."""

from __future__ import annotations

import sys

import click

from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.cli import serve as serve_cli


def main() -> None:
    base_url, *args = sys.argv[1:]
    options = ClaudeTransportOptions(test_api_base_url=base_url, test_api_key="sk-fake-serve")

    @click.command()
    @click.option("--port", type=int, default=0)
    @click.option("--host", "address", default="127.0.0.1")
    @click.option("--max-concurrent", type=int, default=4)
    @click.option("--token-env")
    @click.option("--quiet", is_flag=True)
    def command(port: int, address: str, max_concurrent: int, token_env: str | None, quiet: bool) -> None:
        serve_cli.run_server([ClaudeCodeExtension(options=options)], port=port, address=address,
                             max_concurrent=max_concurrent, token_env=token_env, quiet=quiet)

    command.main(args, prog_name="hostlink serve")


if __name__ == "__main__":
    main()
