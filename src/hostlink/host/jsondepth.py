"""How deep a JSON value nests, checked without recursion.

Untrusted JSON (a request body, a tool schema) is refused above a depth before any code walks
it recursively: `json.dumps` and the schema tools recurse once per level and fail with a
`RecursionError` near Python's limit (about 1,000 levels).
"""

from __future__ import annotations

from typing import Any


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests objects/arrays more than `limit` levels (`{}` is one level).

    Walked level by level, each container touched once: the cost is that of one pass over it.
    """
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        if not level:
            return False
        level = [item for container in level
                 for item in (container.values() if isinstance(container, dict) else container)
                 if isinstance(item, (dict, list))]
    return bool(level)
