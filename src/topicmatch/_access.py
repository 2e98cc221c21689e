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

**Publish and receive** are decided as Mosquitto 2.0's default ACL check decides them, for a
topic T and a client (username U or anonymous, client id C):

1. the ``topic`` rules of U (of the anonymous section if U is None): if a ``deny`` rule matches
   T, no; if a rule that grants the access matches T, yes;
2. if there are ``pattern`` rules and U or C contains ``+`` or ``#``, no (such a name could
   widen a pattern);
3. the ``pattern`` rules, with ``%u`` and ``%c`` replaced by U and C (a rule with ``%u`` does
   not apply to an anonymous client): deny first, then a grant, as in 1;
4. otherwise no.

Rules match with MQTT's rules, the ``$`` rule included (``#`` grants no ``$SYS`` topic).
tests/brokers/test_access_mosquitto.py checks these answers against a real Mosquitto given the
same file, on a generated grid of users, client ids, rules and topics.

**Subscribe** is where this class is stricter than Mosquitto. Mosquitto accepts every
subscription and checks ``read`` on each message it would deliver, so a client allowed
``sensors/+`` may subscribe to ``sensors/#`` and silently receive only part of it.
:meth:`AccessRules.may_subscribe` allows a filter F only if no ``deny`` rule that could apply
overlaps F and one rule that grants ``read`` *covers* F (every topic F matches, that rule
matches: :meth:`Dialect.covers <topicmatch.Dialect.covers>`), so an allowed subscription
receives everything it asks for and no wildcard escapes the rules. The check is sound, not
complete: a filter covered only by several rules together is refused.

**Cost.** Parsing is O(text). Each check is O(rules of the client x words) (the
``covers``/``overlaps`` of a subscribe are bounded by the pattern algebra's budget; a rule too
hostile to decide within it does not grant). Errors: :class:`~topicmatch.InvalidRuleError`
(with the line number) for a line Mosquitto would not load, the dialect's
:class:`~topicmatch.InvalidTopicError` / :class:`~topicmatch.InvalidPatternError` for a bad
topic or filter asked about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._dialects import make_dialect, plain
from ._errors import ComplexityError, ConfigurationError, InvalidPatternError, InvalidRuleError
from ._typevars import Text
from ._words import Tokens, pattern_matches

__all__ = ["AccessRules"]

_MQTT: Final = make_dialect("mqtt")
READ: Final = 1
WRITE: Final = 2
_ACCESS: Final = {"read": READ, "write": WRITE, "readwrite": READ | WRITE, "deny": 0}


@dataclass(frozen=True)
class _Rule:
    access: int  # READ, WRITE, both, or 0 for deny
    text: str  # the filter as written (patterns: with %u/%c)
    tokens: Tokens  # topic rules: the filter's tokens (patterns: unused, substituted per client)
    uses_username: bool


_Entry = tuple[int, str, Tokens]  # (access, filter, its tokens) of one rule for one client


class AccessRules:
    """Mosquitto-style access rules (module docstring), parsed from the text of an acl_file.

    >>> rules = AccessRules('''
    ... user alice
    ... topic readwrite home/alice/#
    ... pattern read devices/%c/#
    ... ''')
    >>> rules.may_publish("home/alice/lamp", username="alice", client_id="phone")
    True
    >>> rules.may_receive("devices/phone/battery", username="bob", client_id="phone")
    True
    >>> rules.may_subscribe("devices/+/battery", username="bob", client_id="phone")
    False
    """

    def __init__(self, text: Text) -> None:
        if not isinstance(text, str):
            raise ConfigurationError(
                f"AccessRules takes the text of an acl_file (a str), not {type(text).__name__}; "
                "AccessRules.from_file reads one"
            )
        self._users: dict[str | None, list[_Rule]] = {}
        self._patterns: list[_Rule] = []
        user: str | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            keyword, _, rest = line.partition(" ")
            rest = rest.strip()
            if keyword == "user":
                if not rest:
                    raise InvalidRuleError(number, raw, "'user' needs a username")
                user = rest
                self._users.setdefault(user, [])
            elif keyword in ("topic", "pattern"):
                access_word, _, filter_ = rest.partition(" ")
                if access_word in _ACCESS:
                    access, filter_ = _ACCESS[access_word], filter_.strip()
                else:
                    access, filter_ = READ | WRITE, rest
                if not filter_:
                    raise InvalidRuleError(number, raw, f"'{keyword}' needs a topic filter")
                if keyword == "topic":
                    self._users.setdefault(user, []).append(
                        _Rule(access, filter_, _parse(number, raw, filter_), False)
                    )
                else:
                    # Validate with a sample substitution; each client gets its own at check time.
                    _parse(number, raw, filter_.replace("%u", "u").replace("%c", "c"))
                    self._patterns.append(_Rule(access, filter_, (), "%u" in filter_))
            else:
                raise InvalidRuleError(number, raw, f"unknown keyword {keyword!r} (user, topic or pattern)")
        # Mosquitto looks at the deny rules of each list first.
        for rules in self._users.values():
            rules.sort(key=lambda rule: rule.access != 0)
        self._patterns.sort(key=lambda rule: rule.access != 0)

    @classmethod
    def from_file(cls, path: str | Path) -> AccessRules:
        """The rules of an acl_file (UTF-8)."""
        if not isinstance(path, (str, Path)):
            raise ConfigurationError(f"the path of an acl_file is a str or a Path, not {type(path).__name__}")
        return cls(Path(path).read_text(encoding="utf-8"))

    def __repr__(self) -> str:
        count = sum(len(rules) for rules in self._users.values())
        return f"<AccessRules topic rules={count} pattern rules={len(self._patterns)}>"

    # -- the three questions ------------------------------------------------------------------
    def may_publish(self, topic: Text, *, username: Text | None, client_id: Text) -> bool:
        """Whether the client may publish to ``topic`` (``write`` access)."""
        return self._decide(_MQTT.parse_topic(topic), WRITE, username, client_id)

    def may_receive(self, topic: Text, *, username: Text | None, client_id: Text) -> bool:
        """Whether a message on ``topic`` may be delivered to the client (``read`` access)."""
        return self._decide(_MQTT.parse_topic(topic), READ, username, client_id)

    def may_subscribe(self, filter_: Text, *, username: Text | None, client_id: Text) -> bool:
        """Whether the client may subscribe to ``filter_``: only if one rule granting ``read``
        covers it and no ``deny`` rule that could apply overlaps it (module docstring).
        ``$share/<group>/<filter>`` is judged by its filter. Raises
        :class:`~topicmatch.InvalidPatternError` for an invalid filter."""
        _MQTT.parse_pattern(filter_)  # its typed error first: an invalid filter, or not a str
        text: str = plain(filter_)
        if text.startswith("$share/"):
            text = text.split("/", 2)[2]
        for group in self._groups(username, client_id):
            if group is None:
                return False
            for access, rule, _tokens in group:
                if access == 0:
                    if _MQTT.overlaps(rule, text):
                        return False
                elif access & READ and _covers(rule, text):
                    return True
        return False

    # -- the decision ------------------------------------------------------------------------
    def _decide(
        self, words: Sequence[str] | None, wanted: int, username: Text | None, client_id: Text
    ) -> bool:
        # The topic is parsed by the caller, the names checked by _groups: their typed errors come
        # before anything would coerce them (docs/compiled.md).
        assert words is not None  # MQTT has no topic that matches nothing
        for group in self._groups(username, client_id):
            if group is None:
                return False
            for access, _rule, tokens in group:
                if pattern_matches(tokens, words, dollar_rule=True):
                    if access == 0:
                        return False
                    if access & wanted:
                        return True
        return False

    def _groups(self, username: Text | None, client_id: Text) -> list[list[_Entry] | None]:
        """The client's two lists of (access, filter, tokens), deny rules first in each: its topic rules,
        then the patterns with its names substituted; None in place of the patterns when a name
        could widen them (Mosquitto then denies). Raises :class:`~topicmatch.ConfigurationError`
        for a username that is not a str or None, or a client id that is not a str."""
        if not (username is None or isinstance(username, str)):
            raise ConfigurationError(f"username must be a str or None, not {type(username).__name__}")
        if not isinstance(client_id, str):
            raise ConfigurationError(f"client_id must be a str, not {type(client_id).__name__}")
        own = [(rule.access, rule.text, rule.tokens) for rule in self._users.get(username, [])]
        if not self._patterns:
            return [own]
        if (username is not None and ("+" in username or "#" in username)) or (
            "+" in client_id or "#" in client_id
        ):
            return [own, None]
        patterns: list[_Entry] = []
        for rule in self._patterns:
            if rule.uses_username and username is None:
                continue
            text = _substitute(rule.text, username or "", client_id)
            try:
                tokens = _MQTT.parse_pattern(text)
            except InvalidPatternError:
                continue  # a name that makes the filter invalid: the rule cannot match
            patterns.append((rule.access, text, tokens))
        return [own, patterns]


def _parse(number: int, raw: str, filter_: str) -> Tokens:
    try:
        return _MQTT.parse_pattern(filter_)
    except InvalidPatternError as error:
        raise InvalidRuleError(number, raw, error.reason) from None


def _substitute(text: str, username: str, client_id: str) -> str:
    """``%u`` and ``%c`` replaced, left to right, as Mosquitto does (other ``%`` kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "%" and i + 1 < n and text[i + 1] in "uc":
            out.append(username if text[i + 1] == "u" else client_id)
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _covers(rule: str, filter_: str) -> bool:
    try:
        return _MQTT.covers(rule, filter_)
    except ComplexityError:
        return False  # too hostile to decide: it grants nothing
