"""The status page of the real `hostlink serve` (real `claude` CLI signed in as a subscription,
fake API) in the real Chromium: a person signs in with the key and sees the plan's bars and the
request just made, its model name, hostile markup, shown as text. Then the same signed-in
browser tries the page under a rebound DNS name and from a page of another origin (fetch, a
frame, the sign-in form with the right key): refused each time."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from peers import requires_claude
from serve_support import KEY, ServeProcess, fa
from status_support import browse, requires_browser, screenshot

pytestmark = [pytest.mark.slow, requires_claude, requires_browser]
HOSTILE = "<img src=x onerror=alert(1)>"


def test_a_person_signs_in_and_sees_the_plan_and_the_requests_as_text(api, tmp_path):
    headers = fa.plan_headers(utilization=0.42)
    headers.update({key.replace("-5h-", "-7d-"): value for key, value in headers.items() if "-5h-" in key})
    headers["anthropic-ratelimit-unified-7d-utilization"] = "0.87"
    headers["anthropic-ratelimit-unified-7d-reset"] = str(int(time.time()) + 3 * 86400 + 7200)
    api.headers = headers
    api.push(fa.text("hello"))
    server = ServeProcess(tmp_path, api, "--subscription")
    try:
        model = f"claude-sonnet-{HOSTILE}"  # the sonnet family, as the client named it
        request = urllib.request.Request(server.base_url + "/v1/messages", method="POST", data=json.dumps({
            "model": model, "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"x-api-key": KEY, "content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 200
        seen = browse(server.base_url + "/", KEY, [model, "POST /v1/messages"], screenshot("serve-status.png"),
                      attacks=True)
    finally:
        server.stop()
    assert seen["first"] == {"status": 401, "forms": 1}
    assert seen["url"] == server.base_url + "/"
    assert seen["meters"] == [0.42, 0.87]
    assert [window.split(" used")[0] for window in seen["windows"]] == ["five hour42%", "seven day87%"]
    assert "(in 59 min)" in seen["windows"][0] and "(in 3 d 1 h)" in seen["windows"][1]
    assert model in seen["cells"] and seen["images"] == 0 and seen["dialogs"] == []
    at = seen["cells"].index("POST /v1/messages")
    row = seen["cells"][at - 1:at + 7]  # time, endpoint, model, status, duration, tokens in, out, prewarmed
    assert row[1:4] == ["POST /v1/messages", model, "200"] and row[4].endswith(" ms") and row[7] in ("yes", "no")
    assert int(row[5]) > 0 and int(row[6]) > 0
    assert "model" in seen["headings"] and "tokens in" in seen["headings"]
    before = seen["errors"][:seen["errorsBefore"]]  # the form's own 401, and nothing the policy refused
    assert [error for error in before if "status of 401" not in error] == [] and seen["markupRefused"] is True
    assert seen["documentCookie"] == ""  # HttpOnly
    [cookie] = seen["cookies"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert KEY not in cookie["value"]
    attacks, base = seen["attacks"], server.base_url
    assert attacks["rebound"] == attacks["requests"][f"GET {base.replace('127.0.0.1', 'rebound.example')}/"] == 403
    assert attacks["read"] == ["failed", "failed"]  # a page of another origin reads nothing, signed in or not
    assert attacks["requests"][f"GET {base}/status.json"] in (403, "net::ERR_FAILED")  # refused, or stopped first
    assert not [text for text in attacks["framed"] if "Recent requests" in text or "plan" in text]
    assert attacks["requests"][f"POST {base}/"] == 403 and "refused" in attacks["formPage"]  # even with the key
    assert attacks["cookies"] == 1  # the form from elsewhere set none
