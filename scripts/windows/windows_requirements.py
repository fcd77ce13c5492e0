"""Print the requirements that the distributions in a `pip install --target` folder declare for
Windows (CPython 3.13, win_amd64) and that the folder does not hold yet, one a line.

pip evaluates environment markers for the machine it runs on, so a win_amd64 install made on
Linux misses what only Windows pulls (keyring's pywin32-ctypes, click's colorama, ...).
scripts/test-windows installs what this prints until it prints nothing.

Usage: python windows_requirements.py TARGET_FOLDER
"""

from __future__ import annotations

import sys
from importlib.metadata import distributions

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

WINDOWS = default_environment() | {
    "os_name": "nt", "sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64",
    "platform_release": "10", "implementation_name": "cpython", "platform_python_implementation": "CPython",
    "python_version": "3.13", "python_full_version": "3.13.2", "implementation_version": "3.13.2",
}


def missing(folder: str) -> list[str]:
    dists = list(distributions(path=[folder]))
    present = {canonicalize_name(d.metadata["Name"]) for d in dists}
    wanted = []
    for dist in dists:
        for line in dist.requires or ():
            requirement = Requirement(line)
            applies = requirement.marker is None or requirement.marker.evaluate(WINDOWS | {"extra": ""})
            if applies and canonicalize_name(requirement.name) not in present:
                requirement.marker = None
                wanted.append(str(requirement))
    return sorted(set(wanted))


if __name__ == "__main__":
    print("\n".join(missing(sys.argv[1])))
