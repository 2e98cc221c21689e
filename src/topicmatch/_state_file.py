"""The file of a matcher's subscriptions (:meth:`Matcher.save <topicmatch.Matcher.save>` and
:meth:`Matcher.load <topicmatch.Matcher.load>`): its format, and the checks that refuse a
truncated, corrupt or foreign file before anything is loaded.

Format, version 1: four parts, the first three one line each.

1. The signature line ``topicmatch-subscriptions 1``: what the file is and its version.
2. The header, one JSON object: ``dialect`` and its limits (``max_bytes``, ``max_words``,
   ``pedantic``, ``max_hashes``), the counts ``patterns`` and ``pairs``, and the body's size in
   bytes ``body_bytes``.
3. ``sha256 <hex>``: the SHA-256 of the header line (its newline included) and the body.
4. The body, one JSON array: the trie of the subscriptions, depth first
   (:meth:`~topicmatch._engine.trie.TrieIndex.records`): the root's patterns, then three values
   per node: its depth, its word (0 for the one-word wildcard, 1 for ``#``; NATS's ``>`` is both,
   as the dialect parses it), and its patterns with their subscribers, ``[pattern, [subscriber,
   ...], ...]``, or 0.

JSON, not pickle: reading a file runs no code of the file's, and subscribers are what JSON
holds (str, int, float, bool, None). The checksum, the sizes and the counts catch a truncated
or damaged file; a foreign file fails at the signature line, which is read without reading on
(a file of another kind, however big, costs 64 bytes). Writing is atomic: a temporary file
beside the target, synced, then renamed over it, so a crash mid-write leaves the old file.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Final

from ._errors import StateFileError, shortened

__all__ = ["FORMAT", "VERSION", "body_counts", "checked_path", "read_state", "state_error", "write_state"]

#: The first word of the signature line, and the format's version after it.
FORMAT: Final = "topicmatch-subscriptions"
VERSION: Final = 1
#: The longest header line read: the header holds a few numbers and names.
_HEADER_LIMIT: Final = 4096
#: The length of the checksum line: ``sha256``, a space, 64 hex digits and a newline.
_CHECKSUM_LINE: Final = 72
#: The header's keys and the type of each.
_HEADER: Final[dict[str, tuple[type, ...]]] = {
    "dialect": (str,),
    "max_bytes": (int,),
    "max_words": (int,),
    "pedantic": (bool,),
    "max_hashes": (int, type(None)),
    "patterns": (int,),
    "pairs": (int,),
    "body_bytes": (int,),
}


def checked_path(path: object, verb: str) -> str:
    """``path`` as a str, for ``verb`` ("save to", "load"); :class:`StateFileError` for anything
    but a str or an ``os.PathLike`` of one (an int would be taken for a file descriptor, bytes
    for a path in another encoding)."""
    try:
        name = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        name = None
    if type(name) is not str:
        raise StateFileError(
            f"cannot {verb} {shortened(repr(path))}: a path is a str or an os.PathLike of one, "
            f"not a {type(path).__name__}"
        )
    return name


def write_state(path: str | os.PathLike[str], header: dict[str, Any], body: list[object]) -> None:
    """Write the file: ``header`` (without ``body_bytes``, which this adds) and ``body``,
    atomically (the module docstring). O(the body's size)."""
    data = json.dumps(body, separators=(",", ":")).encode("ascii")
    line = json.dumps({**header, "body_bytes": len(data)}, separators=(",", ":")).encode("ascii") + b"\n"
    digest = hashlib.sha256(line)
    digest.update(data)
    target = Path(path)
    # Its own name per process and thread: two saves to one path at once each rename a whole file.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temporary, "wb") as out:
            out.write(f"{FORMAT} {VERSION}\n".encode("ascii"))
            out.write(line)
            out.write(f"sha256 {digest.hexdigest()}\n".encode("ascii"))
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_state(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[object]]:
    """The header and body of a file :func:`write_state` wrote; :class:`StateFileError` for a
    file that is not one, is of another version, or was truncated or changed since. O(its
    size); a file whose signature line is wrong costs 64 bytes whatever its size."""
    name = str(path)
    try:
        with open(path, "rb") as file:
            first = file.readline(64)
            signature = f"{FORMAT} {VERSION}\n".encode("ascii")
            if first != signature:
                words = first.split()
                if len(words) == 2 and words[0] == FORMAT.encode() and first.endswith(b"\n"):
                    raise state_error(
                        name,
                        f"its format version is {shortened(words[1].decode('ascii', 'replace'))}; "
                        f"this topicmatch reads version {VERSION}",
                    )
                raise state_error(name, f"it does not start with {FORMAT!r}: not a file Matcher.save wrote")
            line = file.readline(_HEADER_LIMIT)
            if not line.endswith(b"\n"):
                raise state_error(name, "its header line is cut short or too long")
            header = _header(name, line)
            checksum = file.readline(_CHECKSUM_LINE + 1)
            if len(checksum) != _CHECKSUM_LINE or not checksum.startswith(b"sha256 "):
                raise state_error(name, "its checksum line is missing or cut short")
            # The size first: a header that claims more than the file holds must not make the
            # read allocate that much.
            left = os.fstat(file.fileno()).st_size - file.tell()
            if left != header["body_bytes"]:
                raise state_error(
                    name,
                    f"its body is {max(left, 0):,} bytes, its header says "
                    f"{header['body_bytes']:,}: truncated or extended",
                )
            data = file.read(left)
    except OSError as error:
        raise state_error(name, f"it cannot be read ({error.strerror or error})") from None
    if len(data) != header["body_bytes"]:
        raise state_error(name, f"its body changed while it was read ({len(data):,} bytes)")
    digest = hashlib.sha256(line)
    digest.update(data)
    if checksum != f"sha256 {digest.hexdigest()}\n".encode("ascii"):
        raise state_error(
            name, "its header and body do not match its SHA-256: the file was damaged or changed"
        )
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise state_error(name, f"its body is not JSON ({shortened(str(error))})") from None
    if type(body) is not list or not body:
        raise state_error(name, "its body is not the list of a trie's records")
    return header, body


#: The subscribers a file holds: JSON's scalars, which it gives back as they were.
_SCALARS: Final = (str, int, float, bool, type(None))


def body_counts(body: list[object]) -> tuple[int, int]:
    """The patterns and pairs of a body :meth:`TrieIndex.records` made, for its header;
    :class:`StateFileError` for the first subscriber that is not of a type in :data:`_SCALARS`
    (JSON would write another type as something else, or not at all). O(pairs)."""
    patterns = pairs = 0
    for record in (body[0], *body[3::3]):
        if type(record) is not list:
            continue  # 0: no patterns on that node
        for j in range(1, len(record), 2):
            subscribers = record[j]
            assert type(subscribers) is list
            for subscriber in subscribers:
                if type(subscriber) not in _SCALARS:
                    raise StateFileError(
                        f"cannot save a subscriber of type {type(subscriber).__name__} "
                        f"({shortened(repr(subscriber))}): a saved matcher's subscribers are str, int, "
                        "float, bool or None; nothing was written"
                    )
            patterns += 1
            pairs += len(subscribers)
    return patterns, pairs


def _header(name: str, line: bytes) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        raise state_error(name, "its header is not JSON") from None
    if type(header) is not dict:
        raise state_error(name, "its header is not a JSON object")
    for key, types in _HEADER.items():
        value = header.get(key)
        if key not in header or type(value) not in types:
            raise state_error(name, f"its header's {key!r} is missing or not a {types[0].__name__}")
        if type(value) is int and value < 0:
            raise state_error(name, f"its header's {key!r} is negative")
    return header


def state_error(name: str, reason: str) -> StateFileError:
    """The one-line error of the file ``name`` that is refused for ``reason``, by the reader
    here or by the loader (its dialect, its body)."""
    return StateFileError(f"cannot load {shortened(name)}: {reason}; nothing was loaded")
