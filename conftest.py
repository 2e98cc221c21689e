"""Collection rules for every run of pytest here (its doctests in src/ and its tests/).

On the compiled build, the doctests of the compiled modules are left to the pure build's run
(``make test`` has both): pytest imports a module's doctests from its ``.py`` path, and a
compiled module's extension is not that file. The doctests of the other modules run on both.
"""

from __future__ import annotations

from pathlib import Path

import topicmatch
from topicmatch._build import COMPILED_MODULES

_PACKAGE = Path(topicmatch.__file__).resolve().parent


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    path = collection_path.resolve()
    if path.suffix == ".py" and path.is_relative_to(_PACKAGE):
        module = ".".join(path.relative_to(_PACKAGE).with_suffix("").parts)  # _engine.trie
        if module in COMPILED_MODULES:
            return True
    return None
