"""The LangChain host: `ChatClaudeCode` (the Claude Code provider as a chat model) and
`HostlinkMcpTools` (hostlink's MCP client as LangChain tools), each on a hostlink host
session.

    from hostlink.adapters.langchain import ChatClaudeCode, HostlinkMcpTools
    model = ChatClaudeCode(model="sonnet")
    async with HostlinkMcpTools() as tools:
        answer = await model.bind_tools(tools).ainvoke("what can the demo server do?")

Needs the `langchain` extra (`pip install 'hostlink[langchain]'`): langchain-core only.
"""

from hostlink.adapters.langchain.errors import (
    ClaudeAuthenticationError,
    ClaudeCodeError,
    ClaudeContextOverflowError,
    ClaudeInvalidRequestError,
    ClaudePlanRefusedError,
    ClaudeQuotaExceededError,
    ClaudeRateLimitError,
    ClaudeServerError,
)
from hostlink.adapters.langchain.model import ChatClaudeCode
from hostlink.adapters.langchain.tools import HostlinkMcpTools

__all__ = [
    "ChatClaudeCode",
    "ClaudeAuthenticationError",
    "ClaudeCodeError",
    "ClaudeContextOverflowError",
    "ClaudeInvalidRequestError",
    "ClaudePlanRefusedError",
    "ClaudeQuotaExceededError",
    "ClaudeRateLimitError",
    "ClaudeServerError",
    "HostlinkMcpTools",
]
