"""The pydantic-ai host: `ClaudeCodeModel` (the Claude Code provider as a model) and
`HostlinkMcp` (the bounded `mcp` tool as a toolset), each on a hostlink host session.

    from pydantic_ai import Agent
    from hostlink.adapters.pydantic_ai import ClaudeCodeModel, HostlinkMcp
    agent = Agent(ClaudeCodeModel("sonnet"), toolsets=[HostlinkMcp()])

Needs the `pydantic-ai` extra (`pip install 'hostlink[pydantic-ai]'`).
"""

from hostlink.adapters.pydantic_ai.model import ClaudeCodeModel, ClaudePlanRefusedError
from hostlink.adapters.pydantic_ai.toolset import HostlinkMcp

__all__ = ["ClaudeCodeModel", "ClaudePlanRefusedError", "HostlinkMcp"]
