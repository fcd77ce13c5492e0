"""mkdocs hook: render the docstrings' reST roles (``:class:`~a.b.C```) as code spans.

The docstrings are written for people reading the source; nothing renders reST roles in
Markdown, so without this ":class:" would stay in the API reference's text. ``~`` keeps
the last name only, as Sphinx does.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|const):<code>(~?)([^<]+)</code>")


def _code(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if match.group(1) else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return ROLE.sub(_code, html)
