"""The docs' code blocks, as the tests find them: every fenced block in docs/ and the README is preceded by
`<!-- check: KIND -->` (snippet includes expanded first), so none can go unchecked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
KINDS = {
    "config": "a whole mcp.json document: validated against the schema and by hostlink",
    "help": "commands checked against their --help: every subcommand and option exists",
    "run": "commands run against the demo server",
    "python": "a Python program: compiled, its hostlink imports resolved",
    "client": "a client command for hostlink serve: its Python program compiled, its SDK calls exist",
    "ci": "the README's set-up commands, which CI runs",
    "script": "a contributor's command: a script of scripts/ that exists and is executable",
    "recipe": "a client's own commands or config, under a heading that names the test which runs them",
    "output": "what a command prints, not a command",
}
CHECK = re.compile(r"<!-- check: (\w+) -->")
FENCE = re.compile(r"^```")
SNIPPET = re.compile(r'^--8<-- "([^":]+)(?::(\d+):)?"$', re.M)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    kind: str | None
    language: str
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def page_text(path: Path) -> str:
    """The page as mkdocs sees it, with `--8<-- "FILE[:START:]"` includes expanded."""
    def include(match: re.Match[str]) -> str:
        lines = (ROOT / match.group(1)).read_text().splitlines()
        return "\n".join(lines[int(match.group(2) or 1) - 1:])

    return SNIPPET.sub(include, path.read_text())


def blocks() -> list[Block]:
    found = []
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        lines = page_text(path).splitlines()
        kind: str | None = None
        index = 0
        while index < len(lines):
            line = lines[index]
            if (match := CHECK.fullmatch(line.strip())) is not None:
                kind = match.group(1)
            elif FENCE.match(line):
                end = next(i for i in range(index + 1, len(lines)) if FENCE.match(lines[i]))
                found.append(Block(str(path.relative_to(ROOT)), index + 1, kind, line[3:].strip(),
                                   "\n".join(lines[index + 1:end])))
                kind, index = None, end
            index += 1
    return found


def commands(block: Block) -> list[str]:
    """The command lines of a shell block: comments dropped, continuation lines joined."""
    joined = re.sub(r"\n\s+", " ", block.text)
    result = []
    for raw in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", raw).strip()
        if line and not line.startswith("#"):
            result.append(line)
    return result
