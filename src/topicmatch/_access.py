"""Per-client access rules in Mosquitto's ``acl_file`` style: may this client publish, receive,
subscribe?

The text is Mosquitto's (``mosquitto.conf(5)``, ``acl_file``)::

    # comment
    topic read public/#            <- before any 'user' line: anonymous clients
    user alice
    topic readwrite alice/#        <- alice's rules
    topic deny alice/secret
    pattern write devices/%c/out   <- every client; %c is its client id, %u its username

An access type is ``read``, ``write``, ``readwrite`` (the default when omitted) or ``deny``.

**Parsing** is Mosquitto's, line for line (``aclfile__parse`` in its ``security_default.c``): lines
end at ``\\n`` only (a ``\\r``, ``\\x85`` or U+2028 inside a line is part of it), and a last line
without one that exactly fills Mosquitto's read buffer is lost, as there (:func:`_lines_read`);
trailing ASCII whitespace is cut; a line whose first character is ``#`` is a comment; words are
separated by spaces only (a tab is part of a word); ``topic read`` is the rule ``readwrite read``;
a filter is trimmed of ASCII whitespace and checked as Mosquitto checks one (``+`` and ``#`` whole
levels, ``#`` last, at most 65,535 bytes and 200 ``/``), nothing more: a rule with characters no
topic may carry loads and matches nothing. A line Mosquitto refuses raises
:class:`~topicmatch.InvalidRuleError` (with its number); so does a NUL, which Mosquitto's C reader
cannot read.

**Rules are text, matched as text.** A rule is never read as an MQTT filter of the mqtt dialect:
``$share/g/#`` in a rule, written or substituted, is the literal levels ``$share``, ``g``, ``#``,
which match only topics under ``$share/g/`` (and Mosquitto lets no client read or write those).

**Publish and receive** are decided as Mosquitto's default ACL check decides them, for a topic T
and a client (username U or anonymous, client id C):

0. Mosquitto's own rules: no client writes a topic starting with ``$SYS`` (but
   ``$SYS/broker/connection/+/state``), nor reads or writes one starting with ``$share``;
1. the ``topic`` rules of U (of the anonymous section if U is None or empty: Mosquitto reads an
   empty username as none): if a ``deny`` rule matches T, no; if a rule granting the access
   matches T, yes;
2. if there are ``pattern`` rules and U or C contains ``+`` or ``#``, no (such a name could
   widen a pattern); so for a NUL or a name over 65,535 UTF-8 bytes, which no MQTT client can
   send;
3. the ``pattern`` rules, with the names substituted (below; a rule whose text holds ``%u`` does
   not apply to an anonymous client): deny first, then a grant, as in 1;
4. otherwise no.

A rule matches T with Mosquitto's ``mosquitto_topic_matches_sub``: MQTT's wildcards, and a rule
whose text starts with ``$`` matches only topics that start with ``$``, and the other way round.

**Substitution** depends on the Mosquitto version (``version``): ``"2.0"`` (the default; Debian
12 and 13 ship 2.0) replaces every ``%c`` and ``%u`` of a pattern, left to right, wherever it
stands, and a name with ``/`` adds levels; ``"2.1"`` replaces a ``%c`` or ``%u`` only where it is
a whole level, where it then matches a level equal to the name (an empty name, or one with
``/``, matches nothing), and leaves any other ``%c`` as text. docs/conformance.md lists what
differs between the versions.

**Subscribe** is where this class is stricter than Mosquitto. Mosquitto accepts every
subscription and checks ``read`` on each message it would deliver, so a client allowed
``sensors/+`` may subscribe to ``sensors/#`` and silently receive only part of it.
:meth:`ClientRules.may_subscribe` allows a filter F only if no ``deny`` rule that applies
overlaps F and one rule that grants ``read`` *covers* F (every topic F matches, that rule
matches), so an allowed subscription receives everything it asks for. ``$share/<group>/<filter>``
is judged by its filter, and a filter whose topics all start with ``$share`` is refused (no
client may read them). The check is sound, not complete: a filter covered only by several rules
together is refused.

**Cost.** Parsing is O(text). :meth:`AccessRules.client` is O(the names' length) (C-level scans
for ``+``, ``#``, NUL and ``/``) plus O(rules with ``%``); each check of a :class:`ClientRules` is
O(R x w) steps, R the client's topic rules plus the pattern rules and w the levels of the topic
or filter, whatever the length of the names: a pattern is never substituted into a string, its
levels refer to the name, which is compared with the topic's level only when their lengths agree
(tests/test_access.py counts the steps and the bytes). The checks of :class:`AccessRules` take
the names and call :meth:`~AccessRules.client` first. Errors:
:class:`~topicmatch.InvalidRuleError` for a line Mosquitto would not load,
:class:`~topicmatch.ConfigurationError` for an unknown version or a name of the wrong type, the
mqtt dialect's :class:`~topicmatch.InvalidTopicError` / :class:`~topicmatch.InvalidPatternError`
for a bad topic or filter asked about.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ._dialects import make_dialect, plain
from ._errors import ConfigurationError, InvalidRuleError, shortened
from ._typevars import Text

__all__ = ["VERSIONS", "AccessRules", "ClientRules"]

_MQTT: Final = make_dialect("mqtt")
READ: Final = 1
WRITE: Final = 2
_ACCESS: Final = {"read": READ, "write": WRITE, "readwrite": READ | WRITE, "deny": 0}
#: The Mosquitto versions whose substitution of %c/%u this class follows (module docstring).
VERSIONS: Final = ("2.0", "2.1")
#: Mosquitto's limits on a filter (``mosquitto_sub_topic_check``): bytes, and '/' separators
#: (``TOPIC_HIERARCHY_LIMIT``), so at most 201 levels.
MAX_BYTES: Final = 65_535
MAX_SLASHES: Final = 200
#: What C's isspace() cuts (Mosquitto trims with it, in the C locale).
_C_SPACE: Final = " \t\n\v\f\r"

#: A name's place in a pattern rule's level: the client id or the username. NUL is refused in
#: acl text, so no fragment of a rule's own text is one of these.
_CLIENT: Final = "\x00c"
_USER: Final = "\x00u"
#: A rule's levels are tuples of fragments (the text of a level, or its pieces around the names).
_PLUS: Final = ("+",)
_HASH: Final = ("#",)

Level = tuple[str, ...]


class _Rule:
    """One ``topic`` or ``pattern`` line: its access (READ, WRITE, both, or 0 for deny) and its
    levels; a pattern's levels hold _CLIENT/_USER fragments where the names go."""

    __slots__ = ("access", "clients", "dollar", "hash_last", "levels", "text", "users", "uses_username")

    def __init__(self, access: int, text: str, levels: tuple[Level, ...]) -> None:
        self.access = access
        self.text = text
        self.levels = levels
        self.clients = sum(level.count(_CLIENT) for level in levels)
        self.users = sum(level.count(_USER) for level in levels)
        # Mosquitto's ucount: a '%u' anywhere in the text keeps the rule from anonymous clients,
        # in both versions (even where 2.1 leaves it as text).
        self.uses_username = "%u" in text
        self.hash_last = levels[-1] == _HASH
        # Mosquitto's '$' rule compares the first characters of the rule and the topic: of the
        # text as written (topic rules, and 2.1's patterns) or after substitution (2.0's).
        self.dollar = text.startswith("$")


class _Section:
    """The rules of one user (or of the anonymous section), deny rules apart."""

    __slots__ = ("denies", "grants")

    def __init__(self) -> None:
        self.denies: list[_Rule] = []
        self.grants: list[_Rule] = []

    def add(self, rule: _Rule) -> None:
        (self.grants if rule.access else self.denies).append(rule)


class AccessRules:
    """Mosquitto-style access rules (module docstring), parsed once from the text of an acl_file.

    >>> rules = AccessRules('''
    ... user alice
    ... topic readwrite home/alice/#
    ... pattern read devices/%c/#
    ... ''')
    >>> rules.may_publish("home/alice/lamp", username="alice", client_id="phone")
    True
    >>> phone = rules.client(username="bob", client_id="phone")   # the names checked once
    >>> phone.may_receive("devices/phone/battery"), phone.may_subscribe("devices/+/battery")
    (True, False)
    >>> rules.may_subscribe("#", username=None, client_id="$share/x")   # a name is never a filter
    False
    """

    __slots__ = ("_patterns", "_sections", "version")

    def __init__(self, text: Text, *, version: Text = "2.0") -> None:
        if not isinstance(text, str):
            raise ConfigurationError(
                f"AccessRules takes the text of an acl_file (a str), not {type(text).__name__}; "
                "AccessRules.from_file reads one"
            )
        if not isinstance(version, str) or version not in VERSIONS:
            raise ConfigurationError(
                f"unknown Mosquitto version {version!r}; choose one of {', '.join(VERSIONS)}"
            )
        self.version: str = version
        self._sections: dict[str | None, _Section] = {}
        self._patterns = _Section()
        whole_levels = version == "2.1"
        user: str | None = None
        for number, raw in enumerate(_lines_read(plain(text)), start=1):
            line = raw.rstrip(_C_SPACE)
            if "\x00" in line:
                raise InvalidRuleError(number, raw, "a NUL character, which Mosquitto cannot read")
            if not line or line[0] == "#":
                continue
            keyword, at = _word(line, 0)
            if keyword == "user":
                name = line[at:].strip(_C_SPACE)
                if not name:
                    raise InvalidRuleError(number, raw, "'user' needs a username")
                user = name
            elif keyword in ("topic", "pattern"):
                access_word, at = _word(line, at)
                if not access_word:
                    raise InvalidRuleError(number, raw, f"'{keyword}' needs a topic filter")
                filter_ = line[at:].strip(_C_SPACE)
                if not filter_:  # 'topic read': Mosquitto reads the one word as the filter
                    access, filter_ = READ | WRITE, access_word
                elif access_word in _ACCESS:
                    access = _ACCESS[access_word]
                else:
                    raise InvalidRuleError(
                        number, raw, f"invalid access type {access_word!r} (read, write, readwrite or deny)"
                    )
                reason = _filter_problem(filter_)
                if reason is not None:
                    raise InvalidRuleError(number, raw, reason)
                if keyword == "topic":
                    levels = tuple((level,) for level in filter_.split("/"))
                    self._sections.setdefault(user, _Section()).add(_Rule(access, filter_, levels))
                else:
                    self._patterns.add(_Rule(access, filter_, _template(filter_, whole_levels)))
            else:
                raise InvalidRuleError(number, raw, f"unknown keyword {keyword!r} (user, topic or pattern)")

    @classmethod
    def from_file(cls, path: str | Path, *, version: Text = "2.0") -> AccessRules:
        """The rules of an acl_file. Bytes that are not UTF-8 are kept as they are (Mosquitto
        reads bytes): a rule holding them matches no topic."""
        if not isinstance(path, (str, Path)):
            raise ConfigurationError(f"the path of an acl_file is a str or a Path, not {type(path).__name__}")
        return cls(Path(path).read_bytes().decode("utf-8", "surrogateescape"), version=version)

    def __repr__(self) -> str:
        count = sum(len(s.denies) + len(s.grants) for s in self._sections.values())
        patterns = len(self._patterns.denies) + len(self._patterns.grants)
        return f"<AccessRules version={self.version} topic rules={count} pattern rules={patterns}>"

    def client(self, *, username: Text | None, client_id: Text) -> ClientRules:
        """The rules as they apply to one client, its names checked once: keep it for the
        client's connection. Raises :class:`~topicmatch.ConfigurationError` for a username that
        is not a str or None, or a client id that is not a str."""
        return ClientRules(self, username, client_id)

    # -- the three questions, for a client named at each call ----------------------------------
    def may_publish(self, topic: Text, *, username: Text | None, client_id: Text) -> bool:
        """Whether the client may publish to ``topic`` (``write`` access)."""
        return ClientRules(self, username, client_id).may_publish(topic)

    def may_receive(self, topic: Text, *, username: Text | None, client_id: Text) -> bool:
        """Whether a message on ``topic`` may be delivered to the client (``read`` access)."""
        return ClientRules(self, username, client_id).may_receive(topic)

    def may_subscribe(self, filter_: Text, *, username: Text | None, client_id: Text) -> bool:
        """Whether the client may subscribe to ``filter_`` (:meth:`ClientRules.may_subscribe`)."""
        return ClientRules(self, username, client_id).may_subscribe(filter_)


class ClientRules:
    """The rules of :class:`AccessRules` for one client (:meth:`AccessRules.client`), its names
    checked once; immutable, so any thread may ask."""

    __slots__ = (
        "_clients",
        "_own",
        "_patterns",
        "_substituted",
        "_users",
        "_widens",
        "client_id",
        "username",
    )

    def __init__(self, rules: AccessRules, username: Text | None, client_id: Text) -> None:
        if not (username is None or isinstance(username, str)):
            raise ConfigurationError(f"username must be a str or None, not {type(username).__name__}")
        if not isinstance(client_id, str):
            raise ConfigurationError(f"client_id must be a str, not {type(client_id).__name__}")
        user: str | None = plain(username) if username else None  # "" is anonymous, as Mosquitto reads it
        client: str = plain(client_id)
        self.username = user
        self.client_id = client
        self._own: _Section | None = rules._sections.get(user)
        self._patterns = rules._patterns
        self._widens = _widens(client) or (user is not None and _widens(user))
        whole_levels = rules.version == "2.1"
        self._substituted = not whole_levels  # 2.0: the '$' rule looks at the substituted text
        self._clients = _parts(client, whole_levels)
        self._users = _parts(user, whole_levels) if user is not None else None

    def __repr__(self) -> str:
        user = None if self.username is None else shortened(self.username)
        return f"<ClientRules username={user!r} client_id={shortened(self.client_id)!r}>"

    def may_publish(self, topic: Text) -> bool:
        """Whether the client may publish to ``topic`` (``write`` access). Raises the mqtt
        dialect's :class:`~topicmatch.InvalidTopicError` for a topic it rejects."""
        return self._decide(topic, WRITE)

    def may_receive(self, topic: Text) -> bool:
        """Whether a message on ``topic`` may be delivered to the client (``read`` access)."""
        return self._decide(topic, READ)

    def may_subscribe(self, filter_: Text) -> bool:
        """Whether the client may subscribe to ``filter_``: only if one rule granting ``read``
        covers it and no ``deny`` rule that applies overlaps it (module docstring).
        ``$share/<group>/<filter>`` is judged by its filter. Raises
        :class:`~topicmatch.InvalidPatternError` for a filter the mqtt dialect rejects."""
        _MQTT.parse_pattern(filter_)  # its typed error first: an invalid filter, or not a str
        text: str = plain(filter_)
        if text.startswith("$share/"):
            text = text.split("/", 2)[2]
        if text.startswith("$share"):
            return False  # every topic it matches starts with $share: no client reads those
        words = text.split("/")
        return self._judge(words, text.startswith("$"), READ, True)

    # -- the decision ------------------------------------------------------------------------
    def _decide(self, topic: Text, wanted: int) -> bool:
        words = _MQTT.parse_topic(topic)
        assert words is not None  # MQTT has no topic that matches nothing
        text: str = plain(topic)
        if text.startswith("$share"):
            return False  # Mosquitto's own rule: no client reads or writes these
        if wanted == WRITE and text.startswith("$SYS"):
            # ... nor writes these, but the bridges' state topics, which the rules then decide.
            if not (len(words) == 5 and words[0] == "$SYS" and words[1:3] == ["broker", "connection"]):
                return False
            if words[4] != "state":
                return False
        return self._judge(words, text.startswith("$"), wanted, False)

    def _judge(self, words: list[str], dollar: bool, wanted: int, filter_: bool) -> bool:
        """Mosquitto's order: the user's own section (a deny that applies, then a grant of
        ``wanted`` that applies), then the pattern rules with this client's names in place, the
        same way; nothing granted is a refusal. A rule applies to a topic's words if it matches
        them; to a filter's (``filter_``), a deny if it overlaps the filter and a grant if it
        covers it (module docstring). The test written out at each rule, not a function passed
        in or called: a call per rule cost 3 % more instructions per check interpreted, and a
        function passed in is not a native call compiled."""
        deep = filter_ and words[-1] == "#"  # what a deny pattern must reach: _levels
        own = self._own
        if own is not None:
            for rule in own.denies:
                if rule.dollar == dollar and (
                    _overlaps(rule.levels, words) if filter_ else _matches(rule.levels, words)
                ):
                    return False
            for rule in own.grants:
                if (
                    rule.access & wanted
                    and rule.dollar == dollar
                    and (_covers(rule.levels, words) if filter_ else _matches(rule.levels, words))
                ):
                    return True
        if self._widens:
            return False
        for rule in self._patterns.denies:
            levels = self._levels(rule, len(words), deep)
            if (
                levels is not None
                and self._dollar(rule, levels) == dollar
                and (_overlaps(levels, words) if filter_ else _matches(levels, words))
            ):
                return False
        for rule in self._patterns.grants:
            if rule.access & wanted:
                levels = self._levels(rule, len(words), False)
                if (
                    levels is not None
                    and self._dollar(rule, levels) == dollar
                    and (_covers(levels, words) if filter_ else _matches(levels, words))
                ):
                    return True
        return False

    def _dollar(self, rule: _Rule, levels: tuple[Level, ...]) -> bool:
        """Whether the pattern's text starts with '$', for Mosquitto's '$' rule (_Rule.dollar)."""
        if self._substituted and (rule.clients or rule.users):
            return _dollar(levels)
        return rule.dollar

    def _levels(self, rule: _Rule, count: int, deep: bool) -> tuple[Level, ...] | None:
        """The levels of a pattern rule with this client's names in place, or None where the
        rule cannot match anything of ``count`` levels (more if ``deep``: a filter ending in
        '#'). Counts first, from the number of '/' in each name: O(1) for a rule that cannot
        match, O(its levels) for one that can (each a tuple of the rule's own fragments and
        the names' parts, never a new string)."""
        if rule.uses_username and self.username is None:
            return None  # Mosquitto skips a rule with %u for an anonymous client
        clients, users = self._clients, self._users
        if (rule.clients and clients is None) or (rule.users and users is None):
            return None  # 2.1: an empty name, or one with '/', matches no level
        size = len(rule.levels)
        if rule.clients:
            assert clients is not None
            size += rule.clients * (len(clients) - 1)
        if rule.users:
            assert users is not None
            size += rule.users * (len(users) - 1)
        if deep:  # a filter ending in '#': its topics have count - 1 levels or more
            if not rule.hash_last and size < count - 1:
                return None
        elif size - 1 > count if rule.hash_last else size != count:
            return None
        if not (rule.clients or rule.users):
            return rule.levels
        out: list[Level] = []
        for level in rule.levels:
            current: list[str] = []
            for fragment in level:
                if fragment in (_CLIENT, _USER):
                    parts = clients if fragment == _CLIENT else users
                    assert parts is not None
                    current.append(parts[0])
                    for part in parts[1:]:
                        out.append(tuple(current))
                        current = [part]
                else:
                    current.append(fragment)
            out.append(tuple(current))
        if len(out) == 1 and not any(out[0]):
            return None  # an empty rule: Mosquitto's matcher refuses it
        return tuple(out)


# -- parsing ---------------------------------------------------------------------------------
#: The size of the buffer Mosquitto's reader starts with, and what it adds when a line does not
#: fit (``aclfile__parse`` and ``fgets_extending``).
_READ_BUFFER: Final = 256
_READ_GROWTH: Final = 1000


def _lines_read(text: str) -> list[str]:
    """The lines of ``text`` as Mosquitto's reader of an acl_file gives them: split at ``\\n``;
    a last line without its ``\\n`` whose UTF-8 bytes exactly fill the reader's buffer is lost.

    Mosquitto reads with ``fgets`` into a buffer that starts at 256 bytes and grows by 1,000
    whenever a line does not fit, kept from line to line. ``fgets`` stops when the buffer is
    full, before it sees the end of the file; the read that would continue the line then
    finds the end and returns nothing, which ends the file there. O(the text's length)."""
    lines = text.split("\n")
    size = _READ_BUFFER
    for length in [_bytes(line) + 1 for line in lines[:-1]] + [_bytes(lines[-1])]:
        while length > size - 1:  # the buffer grows until the line (its "\n" included) fits
            size += _READ_GROWTH
    if length == size - 1:  # the last line, without "\n", fills it exactly
        lines.pop()
    return lines


def _bytes(line: str) -> int:
    """The length of ``line`` in the file: UTF-8, a byte that was not UTF-8 read back as one
    (``from_file``'s surrogateescape), and any other lone surrogate as UTF-8 would write it."""
    try:
        return len(line.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return len(line.encode("utf-8", "surrogatepass"))


def _word(line: str, at: int) -> tuple[str, int]:
    """C's strtok_r(..., " ") from ``at``: the next word between spaces ('' at the end), and
    where the rest begins (past the one space that ended it)."""
    n = len(line)
    while at < n and line[at] == " ":
        at += 1
    end = line.find(" ", at)
    if end < 0:
        return line[at:], n
    return line[at:end], end + 1


def _filter_problem(filter_: str) -> str | None:
    """Why Mosquitto's mosquitto_sub_topic_check refuses a filter, or None: '+' and '#' whole
    levels, '#' last, at most MAX_BYTES bytes of UTF-8 and MAX_SLASHES '/'."""
    levels = filter_.split("/")
    for i, level in enumerate(levels):
        if ("+" in level and level != "+") or ("#" in level and level != "#"):
            return f"invalid topic filter {filter_!r}: wildcards must occupy a whole level"
        if level == "#" and i != len(levels) - 1:
            return f"invalid topic filter {filter_!r}: '#' must be the last level"
    if len(levels) - 1 > MAX_SLASHES:
        return f"invalid topic filter: {len(levels)} levels, Mosquitto takes at most {MAX_SLASHES + 1}"
    if len(filter_) > MAX_BYTES // 4 and len(filter_.encode("utf-8", "surrogateescape")) > MAX_BYTES:
        return f"invalid topic filter: over {MAX_BYTES:,} bytes"
    return None


def _template(filter_: str, whole_levels: bool) -> tuple[Level, ...]:
    """A pattern's levels, each split into its text and the names' places (_CLIENT, _USER):
    every %c and %u read left to right as Mosquitto 2.0 substitutes them, or (``whole_levels``,
    2.1) only a level that is exactly %c or %u."""
    out: list[Level] = []
    for level in filter_.split("/"):
        if whole_levels:
            out.append((_CLIENT,) if level == "%c" else (_USER,) if level == "%u" else (level,))
            continue
        fragments: list[str] = []
        text: list[str] = []
        i, n = 0, len(level)
        while i < n:
            if level[i] == "%" and i + 1 < n and level[i + 1] in "cu":
                fragments.append("".join(text))
                fragments.append(_CLIENT if level[i + 1] == "c" else _USER)
                text = []
                i += 2
            else:
                text.append(level[i])
                i += 1
        fragments.append("".join(text))
        out.append(tuple(f for f in fragments if f) or ("",))
    return tuple(out)


# -- a client's names ------------------------------------------------------------------------
def _widens(name: str) -> bool:
    """Whether a name must not enter a pattern: '+' or '#' (Mosquitto's rule), or what no MQTT
    client can send (a NUL, over MAX_BYTES bytes). C-level scans, O(len(name))."""
    return (
        "+" in name
        or "#" in name
        or "\x00" in name
        or (len(name) > MAX_BYTES // 4 and len(name.encode("utf-8", "surrogateescape")) > MAX_BYTES)
    )


def _parts(name: str, whole_levels: bool) -> list[str] | None:
    """What a name puts in a pattern's levels: its parts between '/' (2.0), or the name as one
    level (2.1, where an empty name or one with '/' matches nothing: None). A name of more than
    MAX_SLASHES '/' makes any rule holding it deeper than any topic: None too."""
    if "/" not in name:  # the usual name: one C-level scan
        return [name] if name or not whole_levels else None
    if whole_levels:
        return None
    parts: list[str] = []
    start = 0
    while len(parts) <= MAX_SLASHES:  # str.find scans with memchr, str.split and count do not
        end = name.find("/", start)
        if end < 0:
            parts.append(name[start:])
            return parts
        parts.append(name[start:end])
        start = end + 1
    return None


# -- matching levels -------------------------------------------------------------------------
def _is(level: Level, word: str) -> bool:
    """Whether a rule's level (its fragments) spells ``word``: lengths first, so a long name
    against a short word is one comparison."""
    if len(level) == 1:
        return level[0] == word
    size = 0
    for fragment in level:
        size += len(fragment)
    if size != len(word):
        return False
    at = 0
    for fragment in level:
        if not word.startswith(fragment, at):
            return False
        at += len(fragment)
    return True


def _dollar(levels: tuple[Level, ...]) -> bool:
    """Whether the rule's text starts with '$' (Mosquitto's rule: such a rule matches only '$'
    topics, and a '$' topic only such rules)."""
    for fragment in levels[0]:
        if fragment:
            return fragment[0] == "$"
    return False  # the first level is empty: the text starts with '/'


def _matches(levels: tuple[Level, ...], words: list[str]) -> bool:
    """Whether the rule matches the topic ``words`` (MQTT's wildcards; '#' also matches the
    parent level). O(levels)."""
    n = len(words)
    for i, level in enumerate(levels):
        if level == _HASH:
            return True
        if i >= n:
            return False
        if level != _PLUS and not _is(level, words[i]):
            return False
    return len(levels) == n


def _covers(levels: tuple[Level, ...], words: list[str]) -> bool:
    """Whether the rule matches every topic the filter ``words`` matches. O(levels)."""
    n = len(words)
    for i, level in enumerate(levels):
        if level == _HASH:
            return True
        if i >= n or words[i] == "#":
            return False
        if level == _PLUS:
            continue
        if words[i] == "+" or not _is(level, words[i]):
            return False
    return len(levels) == n


def _overlaps(levels: tuple[Level, ...], words: list[str]) -> bool:
    """Whether some topic is matched by both the rule and the filter ``words``. O(levels)."""
    n = len(words)
    for i in range(max(len(levels), n)):
        level = levels[i] if i < len(levels) else None
        word = words[i] if i < n else None
        if level == _HASH or word == "#":
            return True
        if level is None or word is None:
            return False
        if level != _PLUS and word != "+" and not _is(level, word):
            return False
    return True
