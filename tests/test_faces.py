"""The public faces: `hostlink.host`, `hostlink.mcp` and `hostlink.claude_code` list exactly the
names hosts use, each name resolves, the type checker sees each one, and importing a face stays
free (its names load on first use)."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from source_support import parse

SRC = Path(importlib.import_module("hostlink").__file__).parent.parent  # wherever this test lives

FACES = {
    "hostlink.host": [
        "IMAGE_EXTENSIONS", "IMAGE_MIME_TYPES", "AfterProviderResponse", "Answer", "Ask", "AssistantContent",
        "AssistantMessage", "BeforeProviderRequest", "CancelSignal", "Cancelled", "CommandFailed", "CommandSpec",
        "Complete", "Context", "Done", "ErrorEvent", "Extension", "GenerationSettings", "ImageContent", "Message",
        "ModelSpec", "NoticeLevel", "Notifier", "ProviderHooks", "ProviderRefused", "ProviderRequest",
        "ProviderResponse", "ProviderSpec", "ProviderStream", "Question", "Registry", "Session",
        "SessionShutdownHandler", "SessionStartHandler", "StopReason", "StreamEvent", "TextContent", "TextDelta",
        "ThinkingContent", "ThinkingDelta", "ToolCall", "ToolCallEvent", "ToolDefinition", "ToolExecute",
        "ToolResult", "ToolResultMessage", "ToolSpec", "Usage", "UserContent", "UserMessage", "text_problem",
    ],
    "hostlink.mcp": [
        "SEE_TOOLS", "AuthManager", "AuthRequired", "CachedTool", "CallFailed", "ConfigError", "HttpServer",
        "InputError", "LoadedConfig", "McpError", "McpExtension", "McpRuntime", "RegistryError",
        "ResourceSubscriptions", "SecureStore", "StdioServer", "ToolCache", "asking_server", "build_entry",
        "cache_directory", "default_auth", "enabled_config", "error_code", "every_page", "filter_note", "listing_line",
        "listings", "load_config", "model_visible", "project_config_files", "record_key", "registry_from",
        "search_pages", "server_record", "server_words", "sign_in", "sign_in_prompt", "signed_out",
        "status_rows", "stored_state", "table", "task_mark", "tool_line", "transport_of", "user_config_files",
        "CANCEL_SECONDS", "ID_CHARS", "MAX_IN_FLIGHT", "MAX_INPUTS", "Status", "TaskParams", "Tasks", "UpdateParams",
        "STATES", "ServerNumbers", "call_labels",
    ],
    "hostlink.claude_code": [
        "EXTRA_USAGE_MODES", "MODELS", "PROVIDER_NAME", "ClaudeCodeExtension", "ClaudeTransportOptions",
        "ConversationSessions", "ExtraUsageSettingError", "PlanGuard", "PlanUsage", "describe_usage", "diagnose",
        "refusal", "usage_as_json", "write_report",
    ],
}
LAZY = ("hostlink.mcp", "hostlink.claude_code")


@pytest.mark.parametrize("face", FACES)
def test_each_face_lists_exactly_its_names_and_each_resolves(face):
    module = importlib.import_module(face)
    assert sorted(module.__all__) == sorted(FACES[face])
    assert len(set(module.__all__)) == len(module.__all__)
    assert [name for name in module.__all__ if getattr(module, name, None) is None] == []


@pytest.mark.parametrize("face", LAZY)
def test_a_lazy_face_shows_the_type_checker_every_name_it_serves(face):
    tree = parse((SRC / Path(*face.split(".")) / "__init__.py").read_text())
    typed = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.If)
             for inner in ast.walk(node) if isinstance(inner, ast.ImportFrom) for alias in inner.names}
    assert typed == set(FACES[face])
    module = importlib.import_module(face)
    for name in FACES[face]:  # the lazy name is the object its module defines, not a copy
        where = next(node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and name in {alias.asname or alias.name for alias in node.names})
        original = next(alias.name for alias in where.names if (alias.asname or alias.name) == name)
        assert getattr(module, name) is getattr(importlib.import_module(where.module), original)


@pytest.mark.parametrize("face", LAZY)
def test_a_lazy_face_refuses_a_name_it_does_not_serve(face):
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        importlib.import_module(face).nothing_here  # noqa: B018


def test_importing_the_faces_loads_none_of_their_names():
    code = ("import sys, json, hostlink.mcp, hostlink.claude_code, hostlink.host; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('hostlink', 'mcp', 'pydantic', 'anyio', 'httpx2', 'keyring', 'jsonschema', 'jsonschema_rs'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert loaded == ["hostlink", "hostlink.claude_code", "hostlink.host", "hostlink.host.lazy",
                      "hostlink.host.messages", "hostlink.host.registry", "hostlink.mcp"]
