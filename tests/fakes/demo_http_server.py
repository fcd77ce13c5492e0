"""hostlink's demo server (`python -m hostlink.demo`: its tools, resources and prompts) over
Streamable HTTP, as the fixture server serves it: `python tests/fakes/demo_http_server.py --http`
prints its URL as the first stdout line and counts requests (`GET /count`). For tests of what a
command decides with the demo's answers, one server per module instead of a stdio child per command."""

import sys

from mcp_fixture_server import listen

from hostlink.demo.server import server

if __name__ == "__main__":
    if sys.argv[1:] != ["--http"]:
        sys.exit("usage: demo_http_server.py --http")
    listen(server.streamable_http_app())
