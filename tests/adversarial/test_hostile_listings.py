"""Hostile listings: what the CLI prints of a server's tools and identity stays bounded.

Before: 20,000 tools printed 2.6 MB (`tools`) and 21 MB (`tools --json`); a 1 MiB
`serverName` came back whole from `connect --json`.
"""

from __future__ import annotations

import json

from adversarial.support import assert_contained, run_cli, stdio


def test_a_listing_of_20000_tools_is_cut_at_the_models_bound(tmp_path):
    run = run_cli(tmp_path, {"many": stdio("many-tools")}, "mcp", "tools", "many")
    assert run.code == 0, run.err
    assert run.out.rstrip().splitlines()[-1].startswith("[output truncated: showing ")
    assert len(run.stdout) < 52 * 1024
    assert_contained(run)


def test_a_json_listing_is_cut_at_1_mib_and_says_how_to_go_on(tmp_path):
    run = run_cli(tmp_path, {"many": stdio("many-tools")}, "mcp", "tools", "many", "--json")
    assert run.code == 0, run.err
    listed = json.loads(run.stdout)
    assert 1000 < len(listed) < 20_000 and len(run.stdout) <= 1024 * 1024 + 1
    end = len(listed)
    assert run.err.strip() == f"hostlink mcp: listing cut at 1 MiB: tools 1-{end} of 20000; next: --offset {end}"
    rest = run_cli(tmp_path, {"many": stdio("many-tools")}, "mcp", "tools", "many", "--json", "--offset", str(end))
    assert json.loads(rest.stdout)[0]["name"] == f"tool_{end}"
    assert_contained(run, max_bytes=1024 * 1024 + 1)


def test_a_huge_hostile_server_name_is_one_short_clean_line(tmp_path):
    for argv in (("connect", "big"), ("connect", "big", "--json")):
        run = run_cli(tmp_path, {"big": stdio("huge-name")}, "mcp", *argv)
        assert run.code == 0, run.err
        assert len(run.stdout) < 1024 and "owned" not in run.out  # OSC bodies are dropped whole
        assert_contained(run)
