"""What upstream servers ask reaches the MCP host behind `hostlink mcp serve`: a form
(elicitation) and a model request (sampling) when the MCP host declared the capability and the
entry opted in, declined otherwise; roots are the MCP host's when it offers them."""

from __future__ import annotations

import json

import anyio
import pytest

from gateway_support import gateway_in_process
from mcp_auth_support import follow_link
from mcp_runtime_support import HttpFixture

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_browser", "isolated_state")]


def upstream(asker: HttpFixture, **fields) -> dict:
    """The config entry of the module's asker (tests/conftest.py)."""
    return {"url": asker.url, "protocolVersion": "legacy", **fields}


def answer(result) -> dict:
    return json.loads(result.content[0].text)


async def test_a_form_goes_to_the_mcp_host_and_its_answer_back(asker, tmp_path):
    import mcp_types

    asked = []

    async def elicit(context, params):
        asked.append(params)
        return mcp_types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    async with gateway_in_process(tmp_path, {"asker": upstream(asker, elicitation=True)}, mode="legacy",
                                  elicitation_callback=elicit) as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "ask_user"})
    assert answer(result) == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    (params,) = asked
    assert "'asker'" in params.message and "\x1b" not in params.message  # sanitized, says who asks
    assert set(params.requested_schema["properties"]) == {"name", "age", "color", "subscribe"}


async def test_a_form_is_declined_without_the_opt_in_or_the_capability(asker, tmp_path):
    import mcp_types

    async def elicit(context, params):
        raise AssertionError("asked without the opt-in")

    async with gateway_in_process(tmp_path, {"asker": upstream(asker)}, mode="legacy",
                                  elicitation_callback=elicit) as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "ask_user"})
    assert "error" in answer(result)  # the upstream server saw no elicitation capability
    entry = upstream(asker, elicitation=True)
    async with gateway_in_process(tmp_path / "b", {"asker": entry}, mode="legacy") as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "ask_user"})
    assert answer(result)["action"] == "decline"
    assert mcp_types  # the SDK's types were importable for the callbacks above


async def test_sampling_goes_to_the_mcp_hosts_model(asker, tmp_path):
    import mcp_types

    requests = []

    async def sample(context, params):
        requests.append(params)
        return mcp_types.CreateMessageResult(role="assistant", model="host-model", stop_reason="endTurn",
                                             content=mcp_types.TextContent(type="text", text="Paris."))

    entry = upstream(asker, sampling={"model": "claude-code/haiku", "maxTokens": 50})
    async with gateway_in_process(tmp_path, {"asker": entry}, mode="legacy", sampling_callback=sample) as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "sample",
                                                "args": {"prompt": "Capital of France?"}})
    assert answer(result)["text"] == "Paris."
    (params,) = requests
    assert params.messages[0].content.text == "Capital of France?"
    assert params.model_preferences.hints[0].name == "haiku"


async def test_roots_are_the_mcp_hosts(asker, tmp_path):
    import mcp_types

    async def roots(context):
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri="file:///work/host-project", name="project")])

    entry = upstream(asker, roots=True)
    async with gateway_in_process(tmp_path, {"asker": entry}, mode="legacy", list_roots_callback=roots) as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "roots_after"})
    listed = json.loads(result.content[0].text)
    assert "file:///work/host-project" in json.dumps(listed)


async def test_a_sign_in_link_is_offered_by_url_elicitation(tmp_path, fake_oauth, keyring_required):
    import mcp_types

    offered = []

    async def elicit(context, params):
        offered.append(params)
        return mcp_types.ElicitResult(action="accept")

    changed = anyio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    servers = {"web": {"url": fake_oauth.mcp, "auth": "oauth"}}
    async with gateway_in_process(tmp_path, servers, "tools", mode="legacy", elicitation_callback=elicit,
                                  message_handler=on_message) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        started = await client.call_tool("web__sign_in", {})
        assert not started.is_error
        (params,) = offered
        assert (await follow_link(params.url)).status_code == 200  # the user approves in a browser
        with anyio.fail_after(30):
            await changed.wait()  # the sign-in ended: the host hears that the tools changed
        after = [tool.name for tool in (await client.list_tools()).tools]
        whoami = await client.call_tool("web__whoami", {})
    assert listed == ["web__sign_in"]  # the server's tools wait for the sign-in
    assert params.mode == "url" and params.url.startswith(fake_oauth.issuer) and "'web'" in params.message
    assert params.url in started.content[0].text  # the link is in the answer all the same
    assert "web__whoami" in after and "web__sign_in" not in after
    assert not whoami.is_error


async def test_a_form_the_mcp_host_fails_to_answer_is_cancelled(asker, tmp_path):
    import mcp_types

    async def broken(context, params):
        return mcp_types.ErrorData(code=-32603, message="the host's form broke")

    async with gateway_in_process(tmp_path, {"asker": upstream(asker, elicitation=True)}, mode="legacy",
                                  elicitation_callback=broken) as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "ask_user"})
    assert answer(result) == {"action": "cancel", "content": None}


async def test_sampling_the_mcp_host_refuses_is_an_error_the_server_reads(asker, tmp_path):
    import mcp_types

    async def refuse(context, params):
        return mcp_types.ErrorData(code=-32600, message="the user said no")

    entry = upstream(asker, sampling={"model": "claude-code/haiku", "maxTokens": 50})
    call = {"action": "call", "server": "asker", "tool": "sample", "args": {"prompt": "Capital of France?"}}
    async with gateway_in_process(tmp_path, {"asker": entry}, mode="legacy", sampling_callback=refuse) as client:
        refused = answer(await client.call_tool("mcp", call))
    assert "the MCP host did not answer: the user said no" in refused["error"]


async def test_roots_the_mcp_host_fails_to_list_are_the_gateways_own(asker, tmp_path):
    import mcp_types

    async def broken(context):
        return mcp_types.ErrorData(code=-32603, message="no roots today")

    entry = upstream(asker, roots=True)
    async with gateway_in_process(tmp_path, {"asker": entry}, mode="legacy", list_roots_callback=broken) as client:
        result = await client.call_tool("mcp", {"action": "call", "server": "asker", "tool": "roots_after"})
    assert json.loads(result.content[0].text)["roots"] == []  # the gateway itself has none


async def test_a_sign_in_link_the_mcp_host_cannot_take_is_in_the_answer_alone(tmp_path, fake_oauth, keyring_required):
    """A host without URL elicitation is not asked; one whose elicitation fails does not fail the sign-in."""
    import mcp_types

    offered = []

    async def broken(context, params):
        offered.append(params)
        return mcp_types.ErrorData(code=-32603, message="the host's browser broke")

    servers = {"web": {"url": fake_oauth.mcp, "auth": "oauth"}}
    async with gateway_in_process(tmp_path, servers, "tools", mode="legacy") as client:
        unasked = await client.call_tool("web__sign_in", {})
    async with gateway_in_process(tmp_path / "b", servers, "tools", mode="legacy",
                                  elicitation_callback=broken) as client:
        failed = await client.call_tool("web__sign_in", {})
    assert not unasked.is_error and fake_oauth.issuer in unasked.content[0].text
    (params,) = offered
    assert not failed.is_error and params.url in failed.content[0].text
