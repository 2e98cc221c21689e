"""Check that the concurrency tests fail when a rule of the write discipline is removed.

    .venv/bin/python benchmarks/concurrency_mutations.py [pure|compiled]

Not a benchmark, but a one-off check like the scripts beside it: for each rule of
``topicmatch._versions`` (a bracket around a publishing store, the parity test of a reader, a
reader's validation) in each index, it removes the rule from the source, runs
``tests/test_concurrency.py``, ``tests/test_cache.py`` and ``tests/test_dfa.py``, and restores
the file. Every line must say ``caught``; a ``MISSED`` means a rule no test pins. Run it after
changing how an index publishes or reads. On both builds by default, or on the one named:

* ``pure``: the source is mutated in place and the tests run with ``TOPICMATCH_PURE=1`` (about
  a minute; the working tree must be clean of other edits to these files, which it restores
  exactly);
* ``compiled``: each mutation is compiled in a copy of ``src/`` in a temporary directory, whose
  package the tests import (``PYTHONPATH``); the working tree is not touched. About 40 s a
  mutation (the build). The tests that can hook only the pure build are skipped there
  (``@pytest.mark.pure``), so this says what the compiled build's tests catch.

Figures: none; docs/implementation.md ("Concurrency: what every algorithm guarantees") and
docs/compiled.md say what it checks.
It times nothing: it removes each rule from the source as text (``pure``: in the working tree,
restored after; ``compiled``: in a copy) and runs the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "topicmatch"

#: (what is removed, file, text, replacement[, second text, its replacement])
MUTATIONS: list[tuple[str, ...]] = [
    (
        "trie: the bracket of a known pattern's store",
        "_trie.py",
        "            self._version += 1  # odd before the publishing store\n            added = node.add",
        "            added = node.add",
    ),
    (
        "trie: the bracket of a new branch's link",
        "_trie.py",
        "            self._version += 1  # odd before the publishing store (and _inner_hash",
        "            pass  # (and _inner_hash",
    ),
    (
        "trie: the reader's parity test",
        "_trie.py",
        "            if not version & 1:\n                if self._inner_hash:",
        "            if True:\n                if self._inner_hash:",
    ),
    (
        "trie: the reader's validation",
        "_trie.py",
        "                if self._version == version:\n"
        "                    return result\n            yield_to",
        "                if True:\n                    return result\n            yield_to",
    ),
    (
        "trie: a batch walk's DFA only at its version (the drop by writes and the version check)",
        "_trie.py",
        "                self._dfa = None  # it describes a version that has ended",
        "                pass  # it describes a version that has ended",
        "        if dfa is None or dfa.version != version:",
        "        if dfa is None:",
    ),
    (
        "cache: a store checks the version it read",
        "_cache.py",
        "            if self._version != version or topic in self.warm or topic in self.hot:",
        "            if topic in self.warm or topic in self.hot:",
    ),
    (
        "cache: a promotion checks the version it read",
        "_cache.py",
        "            if self._version != version:\n                return\n            result = self.warm",
        "            result = self.warm",
    ),
    (
        "cache: the version moves again after the commit",
        "_cache.py",
        "                return commit(*args)\n            finally:\n"
        "                self._version += 1  # even after",
        "                self._version += 1\n                return commit(*args)\n            finally:\n"
        "                pass  #",
    ),
    (
        "cstrie: the bracket of the CAS",
        "_cstrie.py",
        "            self._version += 1  # odd before the publishing store\n            inode.main = new\n"
        "            self._count += delta\n            if hashed:\n"
        "                self._hash_pairs += delta\n            self._version += 1",
        "            inode.main = new\n            self._count += delta\n            if hashed:\n"
        "                self._hash_pairs += delta\n            self._version += 2",
    ),
    (
        "cstrie: the reader's parity test",
        "_cstrie.py",
        "if self._version == version and not version & 1:",
        "if self._version == version:",
    ),
    (
        "cstrie: the reader's validation",
        "_cstrie.py",
        "if self._version == version and not version & 1:",
        "if True:",
    ),
    (
        "naive: the bracket of a subscribe",
        "_naive.py",
        "            self._version += 1  # odd before the store (._versions, rule 2)\n            try:\n"
        "                self._entries[pattern] = (tokens, old | {subscriber})\n            finally:\n"
        "                self._version += 1  # even after it",
        "            self._entries[pattern] = (tokens, old | {subscriber})\n            self._version += 2",
    ),
    (
        "naive: the reader's validation",
        "_naive.py",
        "return self._read(lambda: self._scan(words))",
        "return self._scan(words)",
    ),
    (
        "bitmaps: the bracket of a subscribe",
        "_bitmaps.py",
        "            self._version += 1  # odd before the first store (._versions, rule 2)\n            try:",
        "            try:",
        "                self._version += 1  # even after the last",
        "                self._version += 2",
    ),
    (
        "_read: the parity test",
        "_versions.py",
        "            if not version & 1:\n                result = compute()",
        "            if True:\n                result = compute()",
    ),
    (
        "_read: the validation",
        "_versions.py",
        "                if self._version == version:\n                    return result",
        "                if True:\n                    return result",
    ),
]


TESTS = ["tests/test_concurrency.py", "tests/test_cache.py", "tests/test_dfa.py"]


def _run_tests(env: dict[str, str]) -> tuple[bool, str]:
    """(caught, the first failure's line) of the tests on the build ``env`` selects."""
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS],
            cwd=ROOT,
            check=False,
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return True, "(the tests hung: a reader spun on an odd version)"
    failed = [line for line in run.stdout.splitlines() if line.startswith("FAILED")][:1]
    return run.returncode != 0, " ".join(failed)


def _on_pure(file: str, mutated: str) -> tuple[bool, str]:
    path = SRC / file
    original = path.read_text()
    path.write_text(mutated)
    try:
        return _run_tests({**os.environ, "TOPICMATCH_PURE": "1"})
    finally:
        path.write_text(original)


def _on_compiled(file: str, mutated: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="topicmatch-mutation-") as scratch:
        tree = Path(scratch)
        ignore = shutil.ignore_patterns("*.so", "_compiled.json", "__pycache__", "*.egg-info")
        shutil.copytree(ROOT / "src", tree / "src", ignore=ignore)
        for name in ("pyproject.toml", "setup.py", "README.md"):
            shutil.copy(ROOT / name, tree / name)
        (tree / "src" / "topicmatch" / file).write_text(mutated)
        build = subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"],
            cwd=tree,
            check=False,
            capture_output=True,
            text=True,
            env={**os.environ, "TOPICMATCH_PURE": ""},
        )
        if build.returncode != 0:
            return False, f"(the mutation did not compile: {build.stderr.strip().splitlines()[-1:]})"
        return _run_tests({**os.environ, "TOPICMATCH_PURE": "", "PYTHONPATH": str(tree / "src")})


def main(builds: list[str]) -> int:
    missed = 0
    for build in builds:
        print(f"{build} build:", flush=True)
        for name, file, old, new, *more in MUTATIONS:
            original = (SRC / file).read_text()
            if old not in original:
                print(f"  {name}: the text to remove is not there any more; update this script")
                missed += 1
                continue
            mutated = original.replace(old, new, 1)
            if more:
                mutated = mutated.replace(more[0], more[1], 1)
            caught, failed = (_on_pure if build == "pure" else _on_compiled)(file, mutated)
            print(f"  {name}: {'caught' if caught else 'MISSED'} {failed}", flush=True)
            missed += not caught
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:2] or ["pure", "compiled"]))
