"""`python llm_e2e_host.py BASE_URL [--subscription] LLM_ARGS…`: the real `llm` CLI, with
hostlink's Claude Code provider pointed at a fake Anthropic API on 127.0.0.1 (`--subscription`:
signed in by a setup token instead of an API key, so the CLI reports the plan's rate limits).

The only test-specific part is the provider's code-only `ClaudeTransportOptions`, handed to
the plugin through `hostlink.adapters.llm.use_extensions` before llm starts; llm then
loads the hostlink plugin from its entry point as always and runs its own CLI.
"""

from __future__ import annotations

import sys

from hostlink.adapters import llm as plugin
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.mcp.extension import McpExtension


def main() -> None:
    base_url, *args = sys.argv[1:]
    if args[:1] == ["--subscription"]:
        args = args[1:]
        options = ClaudeTransportOptions(test_api_base_url=base_url, test_oauth_token="sk-ant-oat01-fake-e2e")
    else:
        options = ClaudeTransportOptions(test_api_base_url=base_url, test_api_key="sk-fake-e2e")
    plugin.use_extensions([McpExtension(), ClaudeCodeExtension(options=options)])
    from llm.cli import cli

    cli.main(args, prog_name="llm")


if __name__ == "__main__":
    main()
