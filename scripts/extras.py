"""Print every extra a pyproject.toml declares, comma-separated (``spark,connect,...``): what
`make venv` and scripts/test-pythons.sh install beside the ``dev`` dependency group, so that
every extra is installed and tested and a new one needs no second list.

Usage: python scripts/extras.py [PYPROJECT]   (default: the repository's pyproject.toml)
"""

import sys
import tomllib
from pathlib import Path

path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "pyproject.toml"
with path.open("rb") as file:
    print(",".join(tomllib.load(file)["project"]["optional-dependencies"]))
