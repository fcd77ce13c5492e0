"""The docs site: it builds strictly, a real headless browser renders its pages with their
navigation and stylesheet, and every code block that is a command or a config is checked."""

from __future__ import annotations

import ast
import functools
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
import urllib.request
from pathlib import Path

import click
import jsonschema
import pytest

from docs_support import DOCS, KINDS, ROOT, Block, blocks, commands, page_text
from hostlink.mcp.config.load import VAR_REFERENCE, parse_document
from mcp_cli_support import run_here
from netns_support import AVAILABLE, only_loopback_port
from peers import requires
from source_support import parse

ALL = blocks()
SCHEMA = json.loads((ROOT / "src/hostlink/mcp/mcp.schema.json").read_text())
CHROMIUM = shutil.which("chromium")
DEMO_CONFIG = {"mcpServers": {"demo": {"command": sys.executable, "args": ["-m", "hostlink.demo"]}}}
ENTRY_POINT_BLOCK = "README.md"
"""The page whose run block goes through the installed `hostlink` script, a real process; the other
blocks, about what each documented command prints, run the same click command in this process."""


def of_kind(kind: str) -> list[Block]:
    return [block for block in ALL if block.kind == kind]


def test_every_code_block_says_how_it_is_checked():
    untagged = [str(b) for b in ALL if b.kind not in KINDS]
    assert not untagged, f"code blocks without a known <!-- check: KIND --> ({', '.join(KINDS)}): {untagged}"
    assert all(of_kind(kind) for kind in ("config", "help", "run", "python")), "a check kind has no block"
    assert [b.page for b in of_kind("run")].count(ENTRY_POINT_BLOCK) == 1, "no run block goes through the script"


def _validate_config(document: dict) -> None:
    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    names = {m.group(1).partition(":-")[0] for m in VAR_REFERENCE.finditer(json.dumps(document))}
    parse_document(json.dumps(document), Path("mcp.json"), {name: "x" for name in names})


@pytest.mark.parametrize("block", of_kind("config"), ids=str)
def test_config_blocks_validate_against_the_schema_and_load(block):
    _validate_config(json.loads(block.text))


# --- commands checked against their --help ------------------------------------------------


def _words(line: str) -> list[str]:
    words = shlex.split(line.replace("…", "x"))
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)  # an environment prefix
    return words


def _check_click(root: click.Command, words: list[str], line: str) -> None:
    """Follow the subcommands the line names (`a|b` names both), then check its options."""
    commands_ = [root]
    rest = words[1:]
    while rest and isinstance(commands_[0], click.Group):
        ctx = click.Context(commands_[0])
        found = [commands_[0].get_command(ctx, name) for name in rest[0].split("|")]
        default = getattr(commands_[0], "default_cmd_name", None)  # llm "…" / llm -m …: its prompt command
        if rest[0].startswith("-") and not default:
            break
        if rest[0].startswith("-") or any(c is None for c in found):
            assert default, f"{line!r}: no command {rest[0]!r}"
            commands_ = [commands_[0].get_command(ctx, default)]
            break
        commands_, rest = found, rest[1:]
    for command in commands_:
        known = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]} | {"--help"}
        known |= {opt for param in root.params for opt in param.opts}
        for word in rest:
            option = word.strip("[]").split("=")[0]
            if option.startswith("-") and option != "-" and not option.startswith("-- "):
                if option == "--":
                    break
                assert option in known, f"{line!r}: {command.name} has no option {option}"


@functools.cache
def _bench_help() -> str:
    """`python -m bench.run --help` as it prints it, run once: each bench line asks it the same."""
    return subprocess.run([sys.executable, "-m", "bench.run", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True).stdout


def _check_bench(words: list[str], line: str) -> None:
    from bench.run import BENCHMARKS

    for word in words[3:]:
        if word.startswith("-"):
            assert word in _bench_help(), f"{line!r}: bench.run has no option {word}"
        elif not word.endswith(".json"):
            assert word in BENCHMARKS, f"{line!r}: no benchmark {word}"


@pytest.mark.parametrize("block", of_kind("help"), ids=str)
def test_help_blocks_name_real_commands_and_options(block):
    from llm.cli import cli as llm_cli

    from hostlink.cli import cli as hostlink_cli

    for line in commands(block):
        words = _words(line)
        program = words[0]
        if program == "hostlink":
            _check_click(hostlink_cli, words, line)
        elif program == "llm" and words[1] in ("mcp", "claude-code"):
            # llm mounts hostlink's own groups (lazily): the same commands and options
            assert llm_cli.get_command(click.Context(llm_cli), words[1]) is not None, line
            _check_click(hostlink_cli, ["hostlink", *words[1:]], line)
        elif program == "llm":
            _check_click(llm_cli, words, line)
        elif words[:3] == [".venv/bin/python", "-m", "bench.run"]:
            _check_bench(words, line)
        else:
            raise AssertionError(f"{block}: {line!r}: not a hostlink, llm or bench command")
        if words[1:3] == ["mcp", "add-json"]:
            _validate_config({"mcpServers": {words[3]: json.loads(words[4])}})


# --- commands run against the demo server ---------------------------------------------------


@pytest.fixture
def demo_home(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config" / "mcp"  # the shared file: `hostlink mcp add` writes hostlink's own
    config.mkdir(parents=True)
    (config / "mcp.json").write_text(json.dumps(DEMO_CONFIG))
    return {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOSTLINK_RUNTIME_DIR": str(tmp_path / "runtime")}


@pytest.mark.parametrize("block", of_kind("run"), ids=str)
def test_run_blocks_work_against_the_demo_server(block, demo_home, tmp_path):
    hostlink = str(Path(sys.executable).with_name("hostlink"))
    for line in commands(block):
        words = _words(line)
        assert words[0] == "hostlink", line
        # "python3 -m hostlink.demo" in an added entry: the interpreter the tests run on
        words = [sys.executable if w == "python3" else w for w in words]
        if block.page == ENTRY_POINT_BLOCK:
            done = subprocess.run([hostlink, *words[1:]], env=demo_home, cwd=tmp_path, capture_output=True,
                                  text=True, timeout=120, stdin=subprocess.DEVNULL)
        else:
            done = run_here(demo_home, tmp_path, tuple(words[1:]), None)
        tool_error = " fail " in f" {line} "  # the demo's fail tool: exit 1 with the tool's error
        assert done.returncode == (1 if tool_error else 0), f"{block}: {line!r}: {done.stderr}"
        assert "Traceback" not in done.stderr and done.stdout.strip(), line
        if "--json" in words:
            json.loads(done.stdout)


# --- Python programs, clients, the README's commands ----------------------------------------


@pytest.mark.parametrize("block", of_kind("python"), ids=str)
def test_python_blocks_compile_and_their_hostlink_imports_resolve(block):
    tree = parse(block.text)
    for node in ast.walk(tree):
        top = node.module.split(".")[0] if isinstance(node, ast.ImportFrom) and node.module else None
        if top in ("hostlink", "pydantic_ai", "langchain_core", "langgraph", "litellm"):
            module = __import__(node.module, fromlist=["_"])
            for alias in node.names:
                assert hasattr(module, alias.name), f"{block}: {node.module} has no {alias.name}"


@pytest.mark.parametrize("block", of_kind("client"), ids=str)
def test_client_blocks_are_programs_whose_sdk_calls_exist(block):
    import openai

    for line in commands(block):
        words = shlex.split(line)
        assert words[:2] == ["python", "-c"], line
        compile(words[2], str(block), "exec")
        assert callable(openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1").chat.completions.create)


@pytest.mark.parametrize("block", of_kind("recipe"), ids=str)
def test_recipe_blocks_stand_under_the_test_that_runs_them(block):
    page = page_text(ROOT / block.page).splitlines()[:block.line]
    heading = next(line for line in reversed(page) if line.startswith("### "))
    named = re.findall(r"`(tests/[\w/]+\.py)`", heading)
    assert named and all((ROOT / name).is_file() for name in named), f"{block}: {heading!r} names no test that exists"
    if block.language == "toml":  # the Codex provider block is the one its test writes
        from serve_support import CODEX_CONFIG

        assert tomllib.loads(block.text) == tomllib.loads(CODEX_CONFIG.format(base_url="http://127.0.0.1:8484"))


@pytest.mark.parametrize("block", of_kind("script"), ids=str)
def test_script_blocks_name_scripts_that_exist(block):
    for line in commands(block):
        script = ROOT / _words(line)[0]
        assert script.parent == ROOT / "scripts" and os.access(script, os.X_OK), f"{block}: {line!r}"


def test_ci_blocks_are_the_readme_commands_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci/run").read_text()
    for block in of_kind("ci"):
        assert f"```sh\n{block.text}\n```" in readme, f"{block}: not the README's command"
    lines = [line.split("  #")[0].strip() for line in ci.splitlines()]
    assert "scripts/setup-test" in lines and "scripts/check" in lines
    assert lines.index("scripts/setup-test") < lines.index("scripts/check")  # installed first, then checked
    # The release build runs beside the checks, and its failure fails the run (wait_beside).
    assert "beside scripts/check-release scripts/check-release" in lines
    assert lines.index("scripts/check") < lines.index("wait_beside")
    check = (ROOT / "scripts/check").read_text()
    assert 'scripts/test "$@"' in check and "coverage report" in check  # the README's command, measured
    assert "hostlink\" demo" in (ROOT / "scripts/check-release").read_text()


# --- the troubleshooting page follows the code ---------------------------------------------


def test_troubleshooting_quotes_messages_that_exist():
    source = "\n".join(p.read_text() for p in (ROOT / "src/hostlink").rglob("*.py"))
    page = (DOCS / "troubleshooting.md").read_text()
    quoted = re.findall(r"^### (?:`` (.+) ``|`(.+)`)$", page, re.M)
    assert len(quoted) >= 20
    for pair in quoted:
        message = pair[0] or pair[1]
        for piece in filter(None, (p.strip() for p in re.split(r"…|'…'", message))):
            assert piece in source, f"troubleshooting quotes {message!r}, but {piece!r} is not in the source"


# --- the built site in a real browser -------------------------------------------------------


def _build(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` as CI runs it. Not --quiet: mkdocs 1.6 then drops the warnings
    --strict counts, and a broken link builds with exit status 0."""
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """Every string statement of a module: its docstrings and those of its attributes."""
    return [(node.lineno, node.value.value) for node in ast.walk(parse(path.read_text()))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)]


def test_docstrings_are_markdown_as_the_reference_renders_them():
    """One markup: Markdown code spans; reST roles and double backticks render as noise."""
    rest = re.compile(r"``|:(?:class|func|meth|mod|attr|data|exc|obj|const):`")
    found = [f"{path.relative_to(ROOT)}:{line}" for folder in ("src", "tests", "bench", "docs")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for line, text in _docstrings(path) if rest.search(text) or text.count("`") % 2]
    assert found == []


def test_the_strict_build_fails_on_a_broken_link(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(DOCS, copy / "docs")
    for name in ("mkdocs.yml", "CHANGELOG.md"):
        shutil.copy(ROOT / name, copy / name)
    for name in ("src", "bench"):
        (copy / name).symlink_to(ROOT / name)
    with (copy / "docs" / "index.md").open("a") as page:
        page.write("\nSee [the missing page](missing.md).\n")
    built = _build(copy, tmp_path / "site")
    assert built.returncode != 0 and "missing.md" in built.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("site")
    built = _build(ROOT, out)
    assert built.returncode == 0, built.stderr[-3000:]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def _dump_dom(url: str, profile: Path) -> str:
    """Chromium resolves names of its own even with background networking off: it runs where
    only the site's port is reachable."""
    with only_loopback_port(url.split(":")[2].split("/")[0]) as isolated:
        done = subprocess.run(
            [*isolated, CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@requires(CHROMIUM is not None and AVAILABLE, "chromium, unshare and ip")
@pytest.mark.parametrize(("path", "heading", "content"), [
    ("/", "hostlink", "Getting started"),
    ("/hosts/cli/", "The hostlink CLI", "Exit status"),
    ("/configuration/", "Configuration", "requestTimeoutMs"),
])
def test_the_browser_renders_pages_with_navigation_and_stylesheet(site, tmp_path, path, heading, content):
    dom = _dump_dom(site + path, tmp_path / "profile")
    assert re.search(rf"<h1[^>]*>{re.escape(heading)}", dom), f"{path}: no rendered <h1>"
    nav = re.findall(r'<a[^>]+href="([^"]+)"[^>]+class="md-nav__link', dom)
    pages = {urllib.request.urljoin(site + path, link) for link in nav if not link.startswith("#")}
    assert len(pages) >= 15, f"{path}: the navigation links {len(pages)} pages"
    for page in pages:  # every page the navigation names is there
        with urllib.request.urlopen(page, timeout=10) as answer:
            assert answer.status == 200, page
    main = dom.split('<article', 1)[1]
    assert content in main and "```" not in main and not re.search(r"^#+ ", main, re.M), f"{path}: raw Markdown"
    sheets = re.findall(r'<link[^>]+rel="stylesheet"[^>]+href="([^"]+)"', dom)
    local = [s for s in sheets if not s.startswith(("http:", "https:"))]
    assert any("main" in s for s in local) and local == sheets, sheets  # nothing fetched from another site
    for sheet in local:
        url = urllib.request.urljoin(site + path, sheet)
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.status == 200 and b"{" in answer.read(4096), url
    if path == "/configuration/":
        assert "<table>" in main and "<code>bearerTokenEnv</code>" in main


def test_the_configuration_page_lists_every_key_of_the_schema(site):
    with urllib.request.urlopen(site + "/configuration/", timeout=10) as answer:
        page = answer.read().decode()
    rows = set(re.findall(r"<tr>\s*<td><code>([^<]+)</code></td>", page))
    for name, definition in SCHEMA["$defs"].items():
        for key, prop in definition.get("properties", {}).items():
            assert key in rows, f"the configuration page has no row for {name}.{key}"
            assert prop["description"].split("`")[0][:30] in page.replace("&quot;", '"').replace("&#39;", "'")
