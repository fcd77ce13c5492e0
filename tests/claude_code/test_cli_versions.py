"""The `claude` CLI a user actually has: every flag a child gets is checked against its
`--help` (and version) before the child starts, a safe one is dropped, any other refusal
names the flag, the version and the fix; a child that exits before it was initialized says
why, in every host's own error shape."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest

from claude_transport_support import OPENING, FakeClaude, collect, context
from hostlink.claude_code import compatibility, doctor, metrics, preflight
from hostlink.claude_code.catalog import build_catalog
from hostlink.claude_code.prewarm import ChildSpec, Prewarmer
from hostlink.claude_code.process import ClaudeTransportOptions, build_argv
from hostlink.claude_code.provider import ClaudeCodeProvider
from hostlink.host import CancelSignal, Done, ErrorEvent
from llm_support import LlmDirs, run_llm

V = compatibility.parse_version
ANSWER = [*OPENING, {"op": "message", "blocks": [{"text": "fine"}]}, {"op": "result"}]


# --- the flag table -------------------------------------------------------------------------


def test_the_flag_table_is_exactly_what_the_argv_builder_can_pass():
    assert sorted(preflight.request_flags()) == sorted(compatibility.FLAGS)
    with pytest.raises(ValueError, match="--brand-new"):
        compatibility.argv_flags(["claude", "-p", "--brand-new", "x"])


def test_help_is_read_in_the_real_layout():
    text = (
        "Usage: claude [options] [command] [prompt]\n\nOptions:\n"
        "  --allowedTools, --allowed-tools <tools...>\n"
        "      Comma or space-separated list of tool names to allow (e.g. \"Bash(git *)\n"
        "  --effort <level>                      Effort level for the current session\n"
        "                                        (low, medium, high, xhigh, max)\n"
        "  -p, --print                           Print response and exit (--tools is\n"
        "  --verbose                             Override the verbose setting\n"
        "\nCommands:\n  auth                                  Manage authentication\n"
    )
    assert compatibility.listed_flags(text) == {"--allowedTools", "--allowed-tools", "--effort", "-p", "--print",
                                                "--verbose"}


def argv(effort=None) -> list[str]:
    return build_argv("claude", model="sonnet", system_prompt_file=Path("/p/s"), mcp_config_file=Path("/p/m"),
                      effort=effort)


def test_a_missing_flag_with_a_safe_fallback_is_left_out_with_its_value():
    everything = frozenset(compatibility.FLAGS)
    adapted = compatibility.adapt_argv(argv(), V("2.1.250"), everything - {"--permission-prompts"})
    expected = argv()
    at = expected.index("--permission-prompts")
    assert adapted == expected[:at] + expected[at + 2:]
    assert compatibility.adapt_argv(argv(), V("2.1.332"), everything) == argv()


def test_a_missing_flag_without_a_fallback_is_refused_naming_it_the_version_and_the_fix():
    with pytest.raises(compatibility.MissingFlag) as raised:
        compatibility.adapt_argv(argv("high"), V("2.1.120"), frozenset(compatibility.FLAGS) - {"--effort"})
    message = str(raised.value)
    assert "--effort" in message and "claude 2.1.120" in message and "claude update" in message


def test_flags_hidden_from_help_are_checked_by_the_measured_version():
    listed = frozenset(compatibility.FLAGS) - {"--max-turns", "--system-prompt-file"}
    assert compatibility.adapt_argv(argv(), compatibility.OLDEST_MEASURED, listed) == argv()
    older = (compatibility.OLDEST_MEASURED[0], compatibility.OLDEST_MEASURED[1], compatibility.OLDEST_MEASURED[2] - 1)
    with pytest.raises(compatibility.MissingFlag, match="--max-turns"):
        compatibility.adapt_argv(argv(), older, listed)


# --- a fake claude without a flag: the doctor and every start refuse it alike ----------------


def fake_environ(fake: FakeClaude) -> dict[str, str]:
    return {"HOME": str(fake.home), "PATH": f"{fake.executable.parent}:/usr/bin:/bin",
            "CLAUDE_CONFIG_DIR": str(fake.config_dir)}


@pytest.mark.anyio
async def test_a_claude_without_a_flag_fails_the_doctor_and_every_start_before_a_child_runs(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script(*ANSWER, version="2.1.290", lacks=["--include-partial-messages"])

    flags = {check.key: check for check in (await doctor.diagnose(fake_environ(fake))).checks}["flags"]
    assert not flags.ok and flags.facts["missing"] == ["--include-partial-messages"]
    assert "--include-partial-messages" in flags.line and "claude 2.1.290" in flags.line
    assert "claude update" in flags.line

    provider = fake.provider()
    (error,) = await collect(provider, context())
    assert isinstance(error, ErrorEvent) and error.code == "cli_unsupported" and error.message == flags.line

    prewarmer = Prewarmer()  # a prewarmed start obeys the same check
    spec = ChildSpec.of(str(fake.executable), "sonnet", None, fake.home, fake_environ(fake), ClaudeTransportOptions(),
                        "system", build_catalog([], []))
    prewarmer.start(spec, object(), ())
    assert await prewarmer.take(spec, (), CancelSignal(), anyio.current_time() + 10) == (None, "fresh")
    await prewarmer.aclose()

    assert fake.logged("argv") == []  # no child ever started: only --version and --help ran
    assert ["--help"] in fake.logged("preflight")


@pytest.mark.anyio
async def test_a_claude_that_gives_no_version_is_refused_before_a_child_runs(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script(*ANSWER, version="")
    (error,) = await collect(fake.provider(), context())
    assert isinstance(error, ErrorEvent) and error.code == "cli_unsupported"
    assert error.message == "could not read a version from `claude --version`: reinstall Claude Code"
    assert fake.logged("argv") == []


@pytest.mark.anyio
async def test_a_claude_without_permission_prompts_serves_without_it(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script(*ANSWER, version="2.1.250", lacks=["--permission-prompts"])
    events = await collect(fake.provider(), context())
    assert isinstance(events[-1], Done)
    (child_argv,) = fake.logged("argv")
    assert ("--permission-prompts" not in child_argv
            and child_argv[child_argv.index("--permission-mode") + 1] == "dontAsk")
    flags = {check.key: check for check in (await doctor.diagnose(fake_environ(fake))).checks}["flags"]
    assert flags.ok and flags.facts["dropped"] == ["--permission-prompts"] and "dontAsk" in flags.line


@pytest.mark.anyio
async def test_the_preflight_is_asked_once_per_executable(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script(*ANSWER)
    for _ in range(2):
        assert isinstance((await collect(fake.provider(), context()))[-1], Done)
    assert fake.logged("preflight") == [["--version"], ["--help"]]
    os.utime(os.path.realpath(fake.executable), ns=(1, 1))  # replaced (say, `claude update`): asked again
    assert isinstance((await collect(fake.provider(), context()))[-1], Done)
    assert fake.logged("preflight")[2:] == [["--version"], ["--help"]]


@pytest.mark.anyio
async def test_a_protocol_refusal_of_a_cli_outside_the_verified_range_says_so(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    older = compatibility.show((compatibility.VERIFIED_MIN[0], compatibility.VERIFIED_MIN[1],
                                compatibility.VERIFIED_MIN[2] - 1))
    fake.script({"op": "control", "permission_mode": None}, {"op": "wait_signal"}, version=older)
    (error,) = await collect(fake.provider(), context())
    assert error.code == "protocol_error" and "not in dontAsk permission mode" in error.message
    assert f"claude {older} is older than the verified range" in error.message and "claude update" in error.message
    fake.script({"op": "control", "permission_mode": None}, {"op": "wait_signal"})  # the pinned version
    os.utime(os.path.realpath(fake.executable), ns=(1, 1))  # a new identity: asked again
    (error,) = await collect(fake.provider(), context())
    assert "verified range" not in error.message


# --- a claude that exits at start: every host's error says why -------------------------------

STDERR = "\x1b[31merror: unknown option '--max-turns'\x1b[0m (config in $HOME/.claude.json)"


def dying_claude(directory: Path) -> Path:
    """A `claude` whose help lists every option but which dies at start, saying why on stderr."""
    directory.mkdir(parents=True)
    script = directory / "claude"
    help_lines = "".join(f"  {flag}  An option\\n" for flag in compatibility.FLAGS)
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n  --version) echo "2.1.199 (Claude Code)"; exit 0;;\n'
        f'  --help) printf "Options:\\n{help_lines}"; exit 0;;\nesac\n'
        f"cat >&2 <<EOF\nLoading…\n{STDERR}\nEOF\nexit 1\n"  # $HOME expands: the user's path
    )
    script.chmod(0o755)
    return script


def assert_explained(message: str, home: str) -> None:
    assert "error: unknown option '--max-turns'" in message and "claude 2.1.199" in message
    assert "(config in ~/.claude.json)" in message and home not in message and "\x1b" not in message
    assert "status 1" in message and "claude update" in message


@pytest.mark.anyio
async def test_an_early_exit_carries_the_clis_last_words_in_the_provider_and_the_doctor(tmp_path, runtime_dir):
    home = tmp_path / "home"
    home.mkdir()
    claude = dying_claude(tmp_path / "bin")
    provider = ClaudeCodeProvider(str(claude), cwd=home, environ={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    (error,) = await collect(provider, context())
    assert isinstance(error, ErrorEvent) and error.code == "unexpected_exit"
    assert_explained(error.message, str(home))
    assert "Loading" in error.message  # the lines before it, bounded
    metrics.record({"outcome": "error", "error_code": error.code, **provider.start_facts})
    text = doctor.Diagnosis([], metrics.last()).text()
    assert "cli_version=2.1.199" in text and "error: unknown option '--max-turns'" in text and str(home) not in text
    (runtime_dir / metrics.FILE_NAME).unlink()


@pytest.mark.anyio
async def test_an_early_exit_is_the_web_search_tools_error(tmp_path, runtime_dir):
    from hostlink.claude_code.web_search import WebSearch

    home = tmp_path / "home"
    home.mkdir()
    claude = dying_claude(tmp_path / "bin")
    search = WebSearch(str(claude), output=lambda: None, cwd=lambda: home,
                       environ={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    result = await search.execute({"query": "what is new"}, CancelSignal())
    assert result.is_error
    assert_explained(result.content[0].text, str(home))


def test_an_early_exit_is_the_llm_error(tmp_path):
    dirs = LlmDirs(tmp_path).create()
    dying_claude(tmp_path / "bin")
    host = [sys.executable, str(Path(__file__).parents[1] / "llm_e2e_host.py"), "http://127.0.0.1:9"]
    result = run_llm(dirs, "-m", "claude-code/sonnet", "-u", "hello", command=host,
                     path=f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin", timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert_explained(result.stderr, str(dirs.home))


@pytest.mark.anyio
async def test_an_early_exit_is_the_pydantic_ai_error(tmp_path, runtime_dir):
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelAPIError

    from hostlink.adapters.pydantic_ai import ClaudeCodeModel

    home = tmp_path / "home"
    home.mkdir()
    dying_claude(tmp_path / "bin")
    model = ClaudeCodeModel("sonnet", cwd=home,
                            environ={"HOME": str(home), "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    with pytest.raises(ModelAPIError) as raised:
        await Agent(model).run("hello")
    assert raised.value.provider_error_code == "unexpected_exit"
    assert_explained(str(raised.value), str(home))
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


def test_an_early_exit_is_the_serve_error_in_both_api_shapes(tmp_path):
    from serve_support import KEY, ServeProcess

    dying_claude(tmp_path / "bin")
    server = ServeProcess(tmp_path / "serve", _NoApi(), claude_bin=tmp_path / "bin")
    try:
        anthropic = post(server, "/v1/messages", {"model": "sonnet", "max_tokens": 10,
                                                  "messages": [{"role": "user", "content": "hello"}]}, KEY)
        openai = post(server, "/v1/chat/completions", {"model": "sonnet",
                                                       "messages": [{"role": "user", "content": "hello"}]}, KEY)
    finally:
        server.stop()
    home = str(tmp_path / "serve" / "home")
    assert anthropic[0] == 500 and anthropic[1]["type"] == "error" and anthropic[1]["error"]["type"] == "api_error"
    assert_explained(anthropic[1]["error"]["message"], home)
    assert openai[0] == 500
    assert_explained(openai[1]["error"]["message"], home)


class _NoApi:
    """The fake API a serve harness wants: never reached, the child dies before asking it."""

    base_url = "http://127.0.0.1:9"


def post(server, path: str, body: dict, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(server.base_url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", "x-api-key": key,
                                              "authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())



def test_the_verified_range_is_the_measured_one():
    passed = [m.version for m in compatibility.MEASURED if m.passed]
    assert (min(passed), max(passed)) == (compatibility.VERIFIED_MIN, compatibility.VERIFIED_MAX)
    inside = [m for m in compatibility.MEASURED
              if compatibility.VERIFIED_MIN <= m.version <= compatibility.VERIFIED_MAX]
    assert all(m.passed is not False for m in inside)
    pinned = json.loads((Path(__file__).resolve().parents[2] / "package.json").read_text())
    assert (compatibility.parse_version(pinned["dependencies"]["@anthropic-ai/claude-code"])
            == compatibility.VERIFIED_MAX)
    since = compatibility.FLAGS["--permission-prompts"].since
    assert any(m.version == since for m in compatibility.MEASURED)  # the bisected boundary is recorded


# --- the remembered facts of a CLI ----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("spoil", [
    {"at": 0},
    {"listed": "--tools"},
    {"version": "not a version"},
], ids=["stale", "listed-not-a-list", "bad-version"])  # fmt: skip
async def test_remembered_facts_that_are_stale_or_spoilt_are_asked_again(tmp_path, runtime_dir, monkeypatch, spoil):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake = FakeClaude(tmp_path)
    executable = str(fake.executable)
    first = await preflight.cli_facts(executable, fake_environ(fake))
    assert await preflight.cli_facts(executable, fake_environ(fake)) == first
    assert len(fake.logged("preflight")) == 2  # --version and --help, once
    stored = tmp_path / "cache" / "hostlink" / preflight.CACHE_FILE
    (key, entry), = json.loads(stored.read_text()).items()
    stored.write_text(json.dumps({key: {**entry, **spoil}}))
    assert await preflight.cli_facts(executable, fake_environ(fake)) == first
    assert len(fake.logged("preflight")) == 4  # asked again, and remembered afresh
    assert json.loads(stored.read_text())[key]["version"] == entry["version"]


@pytest.mark.anyio
async def test_a_cache_that_cannot_be_written_costs_only_a_probe(tmp_path, runtime_dir, monkeypatch):
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake = FakeClaude(tmp_path)
    facts = await preflight.cli_facts(str(fake.executable), fake_environ(fake))
    assert facts.shown_version == "2.1.332"
    await preflight.cli_facts(str(fake.executable), fake_environ(fake))
    assert len(fake.logged("preflight")) == 4  # nothing remembered: asked each time, no error
