"""The layering, read from the code: host API -> extensions -> hosts, no cycle, small modules.

Every `import` of every hostlink module counts, function-local ones and those under
`if TYPE_CHECKING:` too: a cycle only the type checker sees is still two modules that cannot
be understood one without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_support import parse

SRC = Path(__file__).parent.parent / "src"
MAX_LINES = 500
EXTENSIONS = ("hostlink.mcp", "hostlink.claude_code")
HOSTS = ("hostlink.adapters", "hostlink.cli", "hostlink.serve", "hostlink.gateway")
# The parts of hostlink.mcp, bottom to top: each imports only those below it. The modules at the
# package's root (the mcp tool, its renderings, the extension, the face) sit above them all.
MCP_ORDER = ("errors", "config", "transports", "registry", "auth", "runtime")
# Host modules that import an extension past its face, each with its reason.
PAST_THE_FACE = {
    "hostlink.cli.mcp.config": "add, remove and get are the command line of the mcp.json editor "
                               "(mcp.config.edit, mcp.config.load), name for name",
    "hostlink.cli.mcp.importer": "hostlink mcp import is the command line of mcp.config.importer, name for name",
}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "hostlink").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(tree: ast.AST, *, typing: bool) -> list[ast.Import | ast.ImportFrom]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    return [node for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped]


def imports_of(name: str, path: Path, known: dict[str, Path], *, typing: bool = True) -> set[str]:
    """The hostlink modules `name` imports, for the type checker too unless `typing` is False
    (then only those it imports when it runs)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in _imports(parse(path.read_text()), typing=typing):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        found.update(target for target in targets if target in known and target != name)
    return found


def graph(*, typing: bool = True) -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known, typing=typing) for name, path in known.items()}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_extensions_import_only_the_host_api_and_themselves():
    wrong = []
    for name, targets in graph().items():
        for extension in EXTENSIONS:
            if _within(name, (extension,)):
                others = tuple(e for e in EXTENSIONS if e != extension) + HOSTS
                wrong += [f"{name} -> {target}" for target in sorted(targets) if _within(target, others)]
    assert wrong == []


def test_the_host_api_imports_no_extension_and_no_host():
    wrong = [f"{name} -> {target}" for name, targets in graph().items() if _within(name, ("hostlink.host",))
             for target in sorted(targets) if _within(target, EXTENSIONS + HOSTS)]
    assert wrong == []


def test_no_import_cycle_among_hostlink_modules():
    edges = graph()
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str], on_path: set[str], done: set[str]) -> None:
        for target in sorted(edges[node]):
            if target in on_path:
                cycles.append([*path[path.index(target):], target])
            elif target not in done:
                on_path.add(target)
                visit(target, [*path, target], on_path, done)
                on_path.discard(target)
        done.add(node)

    done: set[str] = set()
    for start in sorted(edges):
        if start not in done:
            visit(start, [start], {start}, done)
    assert cycles == []


def test_no_module_over_500_lines():
    long = {name: count for name, path in modules().items()
            if (count := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_graph_sees_function_local_and_type_checking_imports():
    # The reader itself: a function-local import is an edge, and so is a TYPE_CHECKING one.
    edges, runtime = graph(), graph(typing=False)
    assert "hostlink.mcp.runtime.clients" in edges["hostlink.mcp.extension"]  # imported inside _start
    assert "hostlink.host.output" in edges["hostlink.host.registry"]  # TYPE_CHECKING only
    assert "hostlink.host.output" not in runtime["hostlink.host.registry"]


def _mcp_layer(name: str) -> int:
    part = name.removeprefix("hostlink.mcp").removeprefix(".").split(".")[0]
    return MCP_ORDER.index(part) if part in MCP_ORDER else len(MCP_ORDER)


def test_each_part_of_mcp_imports_only_the_parts_below_it():
    wrong = [f"{name} -> {target}" for name, targets in graph().items() if _within(name, ("hostlink.mcp",))
             for target in sorted(targets)
             if _within(target, ("hostlink.mcp",)) and _mcp_layer(target) > _mcp_layer(name)]
    assert wrong == []


def test_every_subpackage_of_mcp_has_its_place_in_the_order():
    subpackages = {path.parent.name for path in (SRC / "hostlink" / "mcp").glob("*/__init__.py")}
    assert subpackages == set(MCP_ORDER) - {"errors"}
    assert (SRC / "hostlink" / "mcp" / "errors.py").is_file()


def test_hosts_import_an_extension_only_through_its_face():
    past = {name: sorted(target for target in targets if _within(target, EXTENSIONS) and target not in EXTENSIONS)
            for name, targets in graph().items() if _within(name, HOSTS)}
    wrong = [f"{name} -> {target}" for name, targets in past.items() if name not in PAST_THE_FACE for target in targets]
    assert wrong == []
    assert [name for name in PAST_THE_FACE if not past.get(name)] == []  # every exception is still needed


SEAM = "hostlink.host.platform"
# What only the platform seam may touch: modules, attributes and keyword arguments that exist on
# some systems only, or whose meaning differs between them.
SYSTEM_MODULES = {"fcntl", "resource", "termios", "tty", "pwd", "grp", "msvcrt", "winreg", "_winapi"}
SYSTEM_ATTRIBUTES = {"SIGHUP", "SIGKILL", "SIGBREAK", "SIGQUIT", "getuid", "geteuid", "killpg", "getpgid", "setsid",
                     "pread", "pwrite", "add_signal_handler", "remove_signal_handler", "O_NOFOLLOW", "O_CLOEXEC",
                     "O_NONBLOCK", "windll", "WinDLL"}
SYSTEM_EXPRESSIONS = {"sys.platform", "os.name"}
SYSTEM_KEYWORDS = {"start_new_session", "preexec_fn", "creationflags", "process_group"}


def system_specific(tree: ast.AST) -> list[str]:
    """Each use in `tree` of what differs between systems, as `line: what`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [name for alias in node.names if (name := alias.name.split(".")[0]) in SYSTEM_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [name for name in [(node.module or "").split(".")[0]] if name in SYSTEM_MODULES]
        elif isinstance(node, ast.Attribute):
            names = [node.attr] if node.attr in SYSTEM_ATTRIBUTES else [
                text for text in [ast.unparse(node)] if text in SYSTEM_EXPRESSIONS]
        elif isinstance(node, ast.keyword):
            names = [node.arg] if node.arg in SYSTEM_KEYWORDS else []
        else:
            continue
        found += [(node.lineno, name) for name in names]
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_only_the_platform_seam_asks_which_system_it_runs_on():
    wrong = {name: found for name, path in modules().items() if not _within(name, (SEAM,))
             if (found := system_specific(parse(path.read_text())))}
    assert wrong == {}


def test_the_seam_check_sees_what_differs_between_systems():
    # The reader itself, on the uses it must catch (each was in the code before the seam).
    source = ("import fcntl\nimport signal as s\nimport sys, os\nx = s.SIGHUP\nsys.platform\nos.getuid()\n"
              "loop.add_signal_handler(1, f)\nopen_process(a, start_new_session=True)\nfrom resource import getrlimit\n"
              "record(resource=1)\nplatform.system()\n")  # a keyword named resource is no module
    assert [entry.split(": ")[1] for entry in system_specific(parse(source))] == [
        "fcntl", "SIGHUP", "sys.platform", "getuid", "add_signal_handler", "start_new_session", "resource"]
