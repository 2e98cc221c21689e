"""The three dialects: how pattern and topic text becomes tokens, and what each broker rejects.

Parsing and validation live here and nowhere else; every algorithm receives canonical tokens
(see :mod:`topicmatch._words`). Each dialect follows the broker it is named after, as observed on
RabbitMQ 3.10, Mosquitto 2.0 and nats-server 2.9 (the conformance tests in ``tests/brokers``
check it against those brokers):

``amqp`` (RabbitMQ topic exchange)
    Separator ``.``. The empty key has zero words; otherwise empty words are real words
    (``a..b`` has three). ``*`` is exactly one word, ``#`` zero or more, and only as a whole word;
    in a published key they are literal words. Nothing is rejected but keys over 255 bytes of
    UTF-8 (a shortstr), and, with ``max_hashes=2``, binding keys of more than two ``#`` words,
    which RabbitMQ 4.3.5 and later refuse (406 PRECONDITION_FAILED; earlier releases, Debian's
    3.10 and 4.0 among them, take any number: the default). No ``$`` rule.
``mqtt`` (Mosquitto)
    Separator ``/``. A filter is non-empty, ``+`` is a whole level, ``#`` the whole last level. A
    topic name is non-empty without ``+`` or ``#``. A topic whose first level starts with ``$`` is
    not matched by a filter starting with a wildcard. ``$share/<group>/<filter>`` matches as
    ``<filter>``. Strings must be valid MQTT UTF-8 (no U+0000, no control characters, no
    non-characters), at most 65,535 bytes and 201 levels (Mosquitto refuses more than 200 ``/``
    in a topic or a filter, a shared filter's ``$share/<group>/`` counted).
``nats`` (nats-server)
    Separator ``.``. A subscription is non-empty with no empty token; ``*`` is one token, ``>``
    one or more and only last. A published subject is non-empty; by default a subject with an
    empty token matches nothing and wildcard tokens are literal, while ``pedantic=True`` rejects
    both, as the server does in pedantic mode. Whitespace cannot be carried by the protocol.

Limits are explicit: ``max_bytes`` (UTF-8 bytes of a pattern or topic), ``max_words`` and
(amqp) ``max_hashes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import ClassVar, Final

from ._algebra import TopicRules, covers, overlaps
from ._errors import ConfigurationError, InvalidPatternError, InvalidTopicError, shortened
from ._typevars import Count, Flag, Text
from ._words import HASH, STAR, Token, Tokens, canonical, pattern_matches

__all__ = ["DIALECTS", "AmqpDialect", "Dialect", "MqttDialect", "NatsDialect", "make_dialect"]

#: Default limits per dialect: (max UTF-8 bytes, max words). AMQP's 255 bytes come from the
#: protocol (a shortstr) and imply at most 256 words. MQTT allows 65,535 bytes, and Mosquitto
#: 200 '/' (its TOPIC_HIERARCHY_LIMIT, in every 2.x), so 201 levels. NATS has no
#: subject limit of its own; 4,096 bytes is its default max_control_line, which bounds a subject.
#: The word limits bound the cost of one match (linear in the number of words).
DEFAULT_LIMITS: Final[dict[str, tuple[int, int]]] = {
    "amqp": (255, 256),
    "mqtt": (65_535, 201),
    "nats": (4_096, 1_024),
}

# Mosquitto's mosquitto_validate_utf8 rejects U+0000, control characters (C0 and C1), surrogates
# and the Unicode non-characters, in topics and filters alike. (The surrogates are made by chr():
# a compiled module keeps its string constants in UTF-8, which cannot hold a lone surrogate.)
_MQTT_BAD_CHAR = re.compile(
    f"[\x00-\x1f\x7f-\x9f{chr(0xD800)}-{chr(0xDFFF)}\ufdd0-\ufdef\ufffe\uffff"
    + "".join(chr(plane << 16 | 0xFFFE) + chr(plane << 16 | 0xFFFF) for plane in range(1, 17))
    + "]"
)
_NATS_WHITESPACE = re.compile(r"[ \t\r\n\f\v]")

# Mosquitto never delivers a '$' topic to a shared subscription, so a shared filter whose first
# level starts with '$' matches nothing at all. We express that with a first word no topic can
# have: U+0000 is rejected in every MQTT string, so every algorithm handles it without a rule.
_NO_TOPIC_HAS_THIS_LEVEL: Final = "\x00$share"


def plain(text: Text) -> Text:
    """A str subclass's value as a plain str (str() would call the subclass's __str__: 'T.STOCK'
    for an ``Enum`` member of ``str``); anything else unchanged, for a dialect to judge."""
    return text if type(text) is str or not isinstance(text, str) else str.__str__(text)


class Dialect:
    """Parsing and validation rules of one broker's topics and patterns, with their limits.

    One subclass per dialect (:class:`AmqpDialect`, :class:`MqttDialect`, :class:`NatsDialect`)
    holds what differs: its constants, the characters it rejects and its parsers. What they
    share (encoding and length checks, word limits, the pattern algebra) is here. Instances
    are immutable once made; build them with :func:`make_dialect`.

    A pattern or topic a caller passes is typed :data:`~._typevars.Text`: a str to type
    checkers, checked here at run time (anything else raises the typed error, in the compiled
    build too: docs/compiled.md).
    """

    __slots__ = ("_ascii_safe_len", "max_bytes", "max_hashes", "max_words", "pedantic")

    #: The dialect's name, as :func:`make_dialect` takes it.
    name: ClassVar[str]
    #: What separates the words of a topic.
    separator: ClassVar[str] = "."
    #: Whether a topic whose first word starts with ``$`` escapes the patterns that start with a
    #: wildcard (MQTT's rule).
    dollar_rule: ClassVar[bool] = False
    #: Whether the empty topic is a topic of zero words (AMQP's empty routing key); elsewhere it
    #: is invalid.
    empty_is_zero_words: ClassVar[bool] = False

    max_bytes: int
    max_words: int
    max_hashes: int | None
    pedantic: bool

    def __init__(
        self, max_bytes: int, max_words: int, pedantic: bool = False, max_hashes: int | None = None
    ) -> None:
        self.max_bytes = max_bytes
        self.max_words = max_words
        self.max_hashes = max_hashes
        self.pedantic = pedantic
        # A string of at most max_bytes // 4 characters cannot exceed max_bytes in UTF-8 (4 bytes
        # per character at most), so short strings skip the encode.
        self._ascii_safe_len = max_bytes // 4

    def __repr__(self) -> str:
        extra = ", pedantic=True" if self.pedantic else ""
        extra += "" if self.max_hashes is None else f", max_hashes={self.max_hashes}"
        return f"Dialect({self.name!r}, max_bytes={self.max_bytes}, max_words={self.max_words}{extra})"

    # -- checks shared by patterns and topics ---------------------------------------------
    def topic_list(self, topics: Iterable[Text]) -> list[Text]:
        """``topics`` as a list, for ``lookup_many``; :class:`InvalidTopicError` for one string
        (a str is an iterable of one-character topics: certainly a mistake) or a non-iterable."""
        given: object = topics  # anything a caller passed: checked here, compiled or not
        if type(given) is list:
            return given
        if isinstance(given, str) or not isinstance(given, Iterable):
            raise InvalidTopicError(
                self.name,
                shortened(repr(given)),
                f"lookup_many takes an iterable of topics, not a {type(given).__name__}",
            )
        return list(given)

    def _check_text(self, text: object, error: type[InvalidPatternError | InvalidTopicError]) -> str:
        if type(text) is not str:
            if not isinstance(text, str):
                raise error(self.name, repr(text), f"must be a str, not {type(text).__name__}")
            text = plain(text)
        assert isinstance(text, str)
        if len(text) > self._ascii_safe_len or not text.isascii():
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError:
                raise error(self.name, text, "is not valid Unicode (lone surrogate)") from None
            if size > self.max_bytes:
                raise error(self.name, text, f"is {size} bytes of UTF-8; the limit is {self.max_bytes}")
        reason = self._bad_characters(text)
        if reason is not None:
            raise error(self.name, text, reason)
        return text

    def _bad_characters(self, text: str) -> str | None:
        """Why ``text`` holds characters this dialect cannot carry, or None (here: it can carry any)."""
        return None

    def _check_words(
        self, text: str, count: int, error: type[InvalidPatternError | InvalidTopicError]
    ) -> None:
        if count > self.max_words:
            raise error(self.name, text, f"has {count} words; the limit is {self.max_words}")

    # -- patterns ----------------------------------------------------------------------------
    def parse_pattern(self, pattern: Text) -> Tokens:
        """Validate a subscription pattern and return its canonical tokens.

        Raises :class:`InvalidPatternError` naming the dialect and the reason.
        """
        return self._tokens(self._check_text(pattern, InvalidPatternError))

    def _tokens(self, pattern: str) -> Tokens:
        """The canonical tokens of a pattern whose text passed :meth:`_check_text`."""
        raise NotImplementedError

    def matches(self, pattern: Text, topic: Text) -> bool:
        """Whether ``topic`` matches ``pattern`` under this dialect's rules: one pair, no index
        (a :class:`~topicmatch.Matcher` answers for many patterns at once). O(len(pattern) x
        len(topic)) at worst, linear on ordinary patterns (:func:`._words.pattern_matches`).
        Raises :class:`InvalidPatternError` or :class:`InvalidTopicError`.

        >>> mqtt = make_dialect("mqtt")
        >>> mqtt.matches("foo/#", "foo/bar"), mqtt.matches("+/bar", "$SYS/bar")
        (True, False)
        """
        tokens = self.parse_pattern(pattern)
        words = self.parse_topic(topic)
        return words is not None and pattern_matches(tokens, words, self.dollar_rule)

    # -- pattern algebra -------------------------------------------------------------------
    def overlaps(self, p: Text, q: Text) -> bool:
        """Whether some valid topic is matched by both patterns (a message could reach the
        subscribers of both). Exact for this dialect: its wildcards, the words a topic may have,
        MQTT's ``$`` rule and shared subscriptions, ``max_words`` (:mod:`._algebra`). Raises
        :class:`InvalidPatternError` for an invalid pattern. O(len(p) x len(q) x their
        literals).

        >>> mqtt = make_dialect("mqtt")
        >>> mqtt.overlaps("a/+/c", "+/b/#"), mqtt.overlaps("$SYS/#", "#"), mqtt.overlaps("a/+", "a")
        (True, False, False)
        """
        return overlaps(self.parse_pattern(p), self.parse_pattern(q), self.topic_rules())

    def covers(self, p: Text, q: Text) -> bool:
        """Whether every valid topic that ``q`` matches, ``p`` matches too (an ACL that allows
        ``p`` allows subscribing to ``q``; a client's ``q`` is redundant beside its ``p``). Exact
        for this dialect, as :meth:`overlaps`. Raises :class:`InvalidPatternError`, and
        :class:`~topicmatch.ComplexityError` for a ``p`` that can be matched in too many ways to
        decide within a bounded number of steps (``#.a.*.*.*...``: every ``*`` doubles them).

        >>> mqtt = make_dialect("mqtt")
        >>> mqtt.covers("a/#", "a/+/b"), mqtt.covers("a/+/b", "a/#"), mqtt.covers("#", "$SYS/x")
        (True, False, False)
        """
        return covers(self.parse_pattern(p), self.parse_pattern(q), self.topic_rules())

    def topic_rules(self) -> TopicRules:
        """What this dialect allows in a topic, for :mod:`._algebra`."""
        return TopicRules(self._word_ok, self.empty_is_zero_words, self.dollar_rule, self.max_words)

    @staticmethod
    def _word_ok(word: str) -> bool:
        """May a topic have this word (a pattern's literal, so never a wildcard)? Here: any."""
        return True

    # -- topics --------------------------------------------------------------------------
    def parse_topic(self, topic: Text) -> list[str] | None:
        """Validate a published topic and return its words, or None if it can match nothing.

        None happens only in NATS's non-pedantic mode, for a subject with an empty token, which
        the server accepts and delivers to nobody. Raises :class:`InvalidTopicError`.
        """
        topic = self._check_text(topic, InvalidTopicError)
        if not topic:
            if self.empty_is_zero_words:
                return []
            raise InvalidTopicError(self.name, topic, "a topic must not be empty")
        words = self._words(topic)
        if words is not None and len(words) > self.max_words:
            raise InvalidTopicError(
                self.name, topic, f"has {len(words)} words; the limit is {self.max_words}"
            )
        return words

    def _words(self, topic: str) -> list[str] | None:
        """The words of a non-empty topic whose text passed :meth:`_check_text` (the word limit
        is checked after), or None when it can match nothing; :class:`InvalidTopicError` when
        this dialect rejects it. Here: split on the separator."""
        return topic.split(self.separator)

    def plain_topics(self) -> tuple[str, int]:
        """A regular expression and a length in characters that together pick out the *plain*
        topics: ordinary ASCII words (letters, digits, ``_``, ``-``, none empty) joined by the
        separator, no longer than the parser's fast path. Of a plain topic, every dialect's
        parser returns ``topic.split(separator)`` (with at most ``max_words`` words: a caller
        checks that count itself), and such a text is also a valid pattern without wildcards,
        whose tokens are its words. For batch engines that validate many topics or patterns at
        once (the Spark workers and the subscription table do it in Arrow); anything else must
        go through :meth:`parse_topic` or :meth:`parse_pattern`.
        """
        word = r"[A-Za-z0-9_\-]+"
        sep = re.escape(self.separator)
        return f"^{word}(?:{sep}{word})*$", self._ascii_safe_len

    def topic_parser(self) -> Callable[[str], list[str] | None]:
        """A function equivalent to :meth:`parse_topic`, fast on ordinary topics.

        The lookup path calls it for every topic the cache does not hold. It checks the common
        case (a short printable ASCII string) with a few C-level string methods and splits it;
        anything else (long, non-ASCII, empty, or with characters the dialect may reject) goes to
        :meth:`parse_topic`, which gives the exact verdict and error. Printable ASCII rules out the
        control characters MQTT rejects and the whitespace NATS rejects, except the space.
        """
        raise NotImplementedError


class AmqpDialect(Dialect):
    """RabbitMQ's topic exchange (see the module's docstring)."""

    __slots__ = ()
    name = "amqp"
    empty_is_zero_words = True

    def _tokens(self, pattern: str) -> Tokens:
        words = pattern.split(".") if pattern else []
        self._check_words(pattern, len(words), InvalidPatternError)
        if self.max_hashes is not None and "#" in pattern:
            hashes = words.count("#")
            if hashes > self.max_hashes:
                raise InvalidPatternError(
                    "amqp",
                    pattern,
                    f"has {hashes} '#' words; the limit is {self.max_hashes} (RabbitMQ 4.3.5 and later: 2)",
                )
        if "#" not in pattern:
            # Without '#' every run of wildcards is already canonical: skip the rewrite.
            return tuple([STAR if w == "*" else w for w in words]) if "*" in pattern else tuple(words)
        return canonical(tuple([STAR if w == "*" else HASH if w == "#" else w for w in words]))

    def topic_parser(self) -> Callable[[str], list[str] | None]:
        slow, safe, max_words = self.parse_topic, self._ascii_safe_len, self.max_words

        def parse_amqp(topic: Text) -> list[str] | None:
            if type(topic) is str and len(topic) <= safe and topic and topic.isascii():
                words = topic.split(".")
                if len(words) <= max_words:
                    return words
            return slow(topic)

        return parse_amqp


class MqttDialect(Dialect):
    """Mosquitto (see the module's docstring)."""

    __slots__ = ()
    name = "mqtt"
    separator = "/"
    dollar_rule = True

    def _bad_characters(self, text: str) -> str | None:
        if text.isascii() and text.isprintable():
            # None of the characters MQTT forbids is printable ASCII. Two C-level checks take
            # about a tenth of the regular expression's time on a short pattern, and every
            # subscribe (and every topic off the lookup's fast path) passes here.
            return None
        bad = _MQTT_BAD_CHAR.search(text)
        return None if bad is None else f"contains U+{ord(bad.group()):04X}, not allowed in MQTT strings"

    @staticmethod
    def _word_ok(word: str) -> bool:
        """May an MQTT topic have this level? No wildcard character, nothing MQTT strings forbid."""
        return "+" not in word and "#" not in word and _MQTT_BAD_CHAR.search(word) is None

    def _tokens(self, pattern: str) -> Tokens:
        bad = InvalidPatternError
        if not pattern:
            raise bad("mqtt", pattern, "a topic filter must not be empty")
        levels = pattern.split("/")
        self._check_words(pattern, len(levels), bad)  # Mosquitto counts the $share prefix too
        if levels[0] == "$share":
            # $share/<group>/<filter>: the group is one non-empty level without wildcards.
            if len(levels) < 3:
                raise bad("mqtt", pattern, "a shared subscription needs $share/<group>/<filter>")
            group = levels[1]
            if not group or "+" in group or "#" in group:
                raise bad("mqtt", pattern, "the share group must be non-empty and without wildcards")
            levels = levels[2:]
            if levels == [""]:
                raise bad("mqtt", pattern, "the filter of a shared subscription must not be empty")
            if levels[0].startswith("$"):
                levels[0] = _NO_TOPIC_HAS_THIS_LEVEL
        tokens: list[Token] = []
        last = len(levels) - 1
        for i, level in enumerate(levels):
            if level == "+":
                tokens.append(STAR)
            elif level == "#":
                if i != last:
                    raise bad("mqtt", pattern, "'#' must be the last level")
                tokens.append(HASH)
            elif "+" in level or "#" in level:
                raise bad("mqtt", pattern, f"wildcards must occupy a whole level, not {level!r}")
            else:
                tokens.append(level)
        return tuple(tokens)

    def _words(self, topic: str) -> list[str] | None:
        if "+" in topic or "#" in topic:
            raise InvalidTopicError("mqtt", topic, "a topic name must not contain '+' or '#'")
        return topic.split("/")

    def topic_parser(self) -> Callable[[str], list[str] | None]:
        slow, safe, max_words = self.parse_topic, self._ascii_safe_len, self.max_words

        def parse_mqtt(topic: Text) -> list[str] | None:
            if (
                type(topic) is str
                and len(topic) <= safe
                and topic.isascii()
                and topic.isprintable()
                and "+" not in topic
                and "#" not in topic
                and topic
            ):
                words = topic.split("/")
                if len(words) <= max_words:
                    return words
            return slow(topic)

        return parse_mqtt


class NatsDialect(Dialect):
    """nats-server, in its default or pedantic mode (see the module's docstring)."""

    __slots__ = ()
    name = "nats"

    def _bad_characters(self, text: str) -> str | None:
        if _NATS_WHITESPACE.search(text) is not None:
            return "contains whitespace, which a NATS subject cannot carry"
        return None

    @staticmethod
    def _word_ok(word: str) -> bool:
        return word != ""  # no empty token (and a pattern's literal has no wildcard)

    def _tokens(self, pattern: str) -> Tokens:
        bad = InvalidPatternError
        if not pattern:
            raise bad("nats", pattern, "a subject must not be empty")
        tokens_text = pattern.split(".")
        self._check_words(pattern, len(tokens_text), bad)
        tokens: list[Token] = []
        last = len(tokens_text) - 1
        for i, token in enumerate(tokens_text):
            if not token:
                raise bad("nats", pattern, "empty tokens are not allowed")
            if token == "*":
                tokens.append(STAR)
            elif token == ">":
                if i != last:
                    raise bad("nats", pattern, "'>' must be the last token")
                tokens.extend((STAR, HASH))  # one or more tokens
            else:
                tokens.append(token)
        return tuple(tokens)

    def _words(self, topic: str) -> list[str] | None:
        words = topic.split(".")
        if "" in words:
            if self.pedantic:
                raise InvalidTopicError("nats", topic, "empty tokens are not allowed")
            return None
        if self.pedantic and ("*" in words or ">" in words):
            raise InvalidTopicError("nats", topic, "wildcards are not allowed in a published subject")
        return words

    def topic_parser(self) -> Callable[[str], list[str] | None]:
        slow, safe, max_words, pedantic = (
            self.parse_topic,
            self._ascii_safe_len,
            self.max_words,
            self.pedantic,
        )

        def parse_nats(topic: Text) -> list[str] | None:
            if (
                type(topic) is str
                and len(topic) <= safe
                and topic.isascii()
                and topic.isprintable()
                and topic
            ):
                words = topic.split(".")
                if (
                    len(words) <= max_words
                    and " " not in topic
                    and "" not in words
                    and not (pedantic and ("*" in words or ">" in words))
                ):
                    return words
            return slow(topic)

        return parse_nats


#: name -> the class of that dialect
_CLASSES: Final[dict[str, type[Dialect]]] = {c.name: c for c in (AmqpDialect, MqttDialect, NatsDialect)}
DIALECTS: Final = tuple(_CLASSES)


def make_dialect(
    name: Text,
    *,
    max_bytes: Count | None = None,
    max_words: Count | None = None,
    pedantic: Flag = False,
    max_hashes: Count | None = None,
) -> Dialect:
    """Build a :class:`Dialect` by name, with the default limits unless overridden.
    ``max_hashes`` (amqp only): the most ``#`` words a pattern may hold; None (the default) for
    no limit, 2 for RabbitMQ 4.3.5 and later (docs/conformance.md lists what differs between
    the brokers' versions).

    >>> make_dialect("mqtt").parse_pattern("sensors/+/temp")
    ('sensors', <*>, 'temp')
    """
    if not isinstance(name, str) or name not in _CLASSES:  # (a list is no key: checked first)
        raise ConfigurationError(f"unknown dialect {name!r}; choose one of {', '.join(DIALECTS)}")
    default_bytes, default_words = DEFAULT_LIMITS[name]
    strict: object = pedantic  # checked here, compiled or not
    if not isinstance(strict, bool):
        raise ConfigurationError(f"pedantic must be True or False, not {strict!r}")
    if strict and name != "nats":
        raise ConfigurationError("pedantic applies to the nats dialect only")
    hashes: object = max_hashes
    if hashes is not None:
        if name != "amqp":
            raise ConfigurationError("max_hashes applies to the amqp dialect only")
        if not isinstance(hashes, int) or isinstance(hashes, bool) or hashes < 1:
            raise ConfigurationError(f"max_hashes must be a positive int or None, not {hashes!r}")
    return _CLASSES[name](
        _positive(max_bytes, default_bytes, "max_bytes"),
        _positive(max_words, default_words, "max_words"),
        strict,
        hashes if isinstance(hashes, int) else None,
    )


def _positive(value: object, default: int, name: str) -> int:
    """``value`` if a positive int, ``default`` if None; else :class:`ConfigurationError`."""
    if value is None:
        return default
    if not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive int, not {value!r}")
    return value
