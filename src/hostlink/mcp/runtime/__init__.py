"""The running clients: one SDK client per server, tool listing, its cache, filters and visibility,
progress, roots, the SDK's log, the background SDK import, and the requests servers send back
(sampling, elicitation) with their schema checks.

Above the `auth` subpackage; the `mcp` tool, its renderings and the extension sit above it.
"""
