"""The access log under a flood: refused requests (4xx) are one line per status a minute, the
next one saying how many were not shown; every answered request keeps its line."""

from __future__ import annotations

import asyncio

from hostlink.serve import access_log


def _app(status: int):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


def _serve(log: access_log.AccessLog, count: int) -> None:
    async def send(message):
        pass

    async def requests():
        for _ in range(count):
            await log({"type": "http", "method": "GET", "path": "/v1/models"}, None, send)

    asyncio.run(requests())


def test_a_flood_of_refusals_is_one_line_and_answers_keep_theirs():
    lines: list[str] = []
    _serve(access_log.AccessLog(_app(403), lines.append), 500)
    assert len(lines) == 1 and " 403 " in lines[0]
    _serve(access_log.AccessLog(_app(200), lines.append), 5)
    assert len(lines) == 6


def test_the_next_shown_refusal_counts_those_not_shown():
    refusals = access_log._Refusals()
    assert refusals.suffix(403, 100.0) == ""
    assert [refusals.suffix(403, 100.0 + i) for i in range(1, 4)] == [None] * 3
    assert refusals.suffix(401, 101.0) == ""  # each status on its own
    assert refusals.suffix(403, 100.0 + access_log.REFUSALS_EVERY_SECONDS) == " (and 3 more 403 not shown)"
    assert refusals.suffix(403, 101.0 + access_log.REFUSALS_EVERY_SECONDS) is None
