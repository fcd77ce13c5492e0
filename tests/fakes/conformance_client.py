"""The client command the MCP conformance harness runs: hostlink's auth and runtime, nothing else.

`python conformance_client.py SERVER_URL` (the harness appends the URL and sets
`MCP_CONFORMANCE_SCENARIO` and, for some scenarios, `MCP_CONFORMANCE_CONTEXT`). It
configures one server the way a user would write `mcp.json` for the scenario, lists the
tools and calls them. When hostlink answers with an authorization link, this command does
what the user's browser would: it opens the link with a plain HTTP GET, takes the
authorization server's redirect and delivers it to hostlink's loopback callback receiver.
Needs a keyring (run under scripts/with-keyring).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys

CLIENT_SECRET_ENV = "CONFORMANCE_CLIENT_SECRET"
PRIVATE_KEY_ENV = "CONFORMANCE_PRIVATE_KEY"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
MAX_SIGN_INS = 3


async def issuer_of(url: str) -> str:
    """The issuer a user would look up and write into the config (the harness does not say it)."""
    from urllib.parse import urlsplit

    import httpx2

    parts = urlsplit(url)
    async with httpx2.AsyncClient() as client:
        for path in (f"/.well-known/oauth-protected-resource{parts.path}", "/.well-known/oauth-protected-resource"):
            answer = await client.get(f"{parts.scheme}://{parts.netloc}{path}")
            if answer.status_code == 200:
                return answer.json()["authorization_servers"][0]
    raise SystemExit("no protected resource metadata to learn the issuer from")


async def server_entry(url: str, scenario: str, context: dict) -> dict:
    entry: dict = {"url": url}
    if scenario.startswith("elicitation"):
        entry["elicitation"] = True
    if not scenario.startswith("auth/"):
        return entry
    entry["auth"] = "oauth"
    if scenario.startswith("auth/client-credentials"):
        entry["oauth"] = {"grantType": "client_credentials", "clientId": context.get("client_id", ""),
                          "issuer": await issuer_of(url)}
        if "private_key_pem" in context:  # private_key_jwt: the key in a variable, as a user keeps it
            entry["oauth"]["clientAssertion"] = {"keyEnv": PRIVATE_KEY_ENV, "alg": context["signing_algorithm"]}
        else:
            entry["oauth"]["clientSecretEnv"] = CLIENT_SECRET_ENV
    elif scenario == "auth/pre-registration":
        entry["oauth"] = {"clientId": context["client_id"], "clientSecretEnv": CLIENT_SECRET_ENV}
    elif scenario == "auth/basic-cimd":
        entry["oauth"] = {"clientMetadataUrl": CIMD_URL}
    return entry


async def open_link_like_a_browser(link: str) -> None:
    import httpx2

    async with httpx2.AsyncClient() as browser:
        approval = await browser.get(link)
        location = approval.headers.get("location")
        if approval.status_code not in (301, 302, 303, 307, 308) or not location:
            raise SystemExit(f"the authorization server did not redirect (HTTP {approval.status_code})")
        answer = await browser.get(location)
        print(f"callback answered HTTP {answer.status_code}", file=sys.stderr)


async def accept_defaults(question):
    """The person this command stands in for: accepts every form with its defaults (the
    scenario's expected answer; a real host asks)."""
    from hostlink.host import Answer

    fields = question.fields["properties"]
    return Answer("accept", {name: field["default"] for name, field in fields.items() if "default" in field})


class StderrNotices:
    def notify(self, message: str, level: str = "info") -> None:
        print(f"{level}: {message}", file=sys.stderr)


def arguments_for(tool) -> dict:
    if tool.name == "add_numbers":
        return {"a": 5, "b": 3}
    return {}


async def main(url: str) -> None:
    from hostlink.mcp.auth.manager import AuthManager
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.errors import AuthRequired
    from hostlink.mcp.runtime.clients import McpRuntime
    from hostlink.mcp.runtime.elicitation import elicitation_for

    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    environ = dict(os.environ)
    if "client_secret" in context:
        environ[CLIENT_SECRET_ENV] = context["client_secret"]
    if "private_key_pem" in context:
        environ[PRIVATE_KEY_ENV] = context["private_key_pem"]
    server = parse_server(await server_entry(url, scenario, context))
    manager = AuthManager(environ=environ)
    # A name of this run's own: the keyring entry is keyed by name, URL and OAuth settings, and the
    # scenarios, each in a fresh network namespace, can get the same URL; a token an earlier
    # scenario left in the suite's keyring would then stand in for this one's sign-in.
    name = f"conformance-{secrets.token_hex(4)}"
    runtime = McpRuntime({name: server}, auth=manager,
                         elicitation=elicitation_for(accept_defaults, StderrNotices()))
    try:
        for _ in range(MAX_SIGN_INS):
            try:
                tools = await runtime.list_tools(name)
                for tool in tools:
                    result = await runtime.call_tool(name, tool.name, arguments_for(tool))
                    print(f"{tool.name}: isError={result.is_error}", file=sys.stderr)
                return
            except AuthRequired as required:  # also a challenge mid-session (401, 403 for more scope)
                if not required.link:
                    raise
                link = required.link
            print(f"sign-in link: {link}", file=sys.stderr)
            await open_link_like_a_browser(link)
            await manager.wait_login(name, server, 30)
            await runtime.reconnect(name)
        raise SystemExit("still not authorized after repeated sign-ins")
    finally:
        await runtime.aclose()
        await manager.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
