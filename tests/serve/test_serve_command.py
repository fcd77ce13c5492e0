"""`hostlink serve`'s own refusals and start-up check, in this process (the server itself runs in
the other tests of this folder, through tests/serve_host.py)."""

from __future__ import annotations

import anyio
import pytest
from click.testing import CliRunner

from hostlink.cli import serve as serve_cli


def test_a_bad_extra_usage_setting_is_refused_before_anything_starts(tmp_path):
    result = CliRunner().invoke(serve_cli.serve_command, [], env={"HOSTLINK_CLAUDE_EXTRA_USAGE": "sometimes",
                                                                 "HOSTLINK_RUNTIME_DIR": str(tmp_path)})  # fmt: skip
    assert result.exit_code == 2
    assert result.output == "serve: HOSTLINK_CLAUDE_EXTRA_USAGE: 'sometimes' is not one of allow, warn, refuse\n"
    assert list(tmp_path.iterdir()) == []  # no key, no server state


class _SlowDoctor:
    """A host whose `claude-code doctor` never finishes."""

    async def run_command(self, provider, argv, signal):
        await anyio.sleep_forever()


@pytest.mark.anyio
async def test_a_start_up_check_that_does_not_finish_is_a_warning(monkeypatch, capsys):
    monkeypatch.setattr(serve_cli, "PREFLIGHT_SECONDS", 0.05)
    await serve_cli.preflight(_SlowDoctor())
    assert capsys.readouterr().err == ("hostlink serve: warning: the start-up check (hostlink claude-code doctor) "
                                       "did not finish within 0.05 s\n")  # fmt: skip
