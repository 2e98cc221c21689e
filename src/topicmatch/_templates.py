"""Named templates (``sensors/{device}/temp``, ``logs/{rest+}``) and a router that sends a topic
to the most specific template that matches it.

**A template** is a pattern of a dialect in which a level (a word) may be a name in braces:
``{name}`` stands for the dialect's one-level wildcard (``+`` in mqtt, ``*`` in amqp and nats),
``{name+}`` for its many-level one (``#``, nats's ``>``), with that wildcard's rules: where it
may stand (mqtt's ``#`` and nats's ``>`` last only) and what it matches (``#`` zero levels or
more, ``>`` one or more). The pattern that results is validated by the dialect, with its
errors. Unnamed wildcards may stand beside named ones: they bind nothing in the dict. A name is
a Python identifier, used once per template; a level that starts with ``{`` and ends with ``}``
but is not ``{identifier}`` or ``{identifier+}`` is refused (a typo would otherwise be a
literal level that no topic has); braces elsewhere are literal text.

**Values** are those of :func:`~topicmatch.capture`: a word for ``{name}``, a tuple of words
for ``{name+}``. A template matches exactly the topics its pattern matches, with the bindings
:meth:`Matcher.captures <topicmatch.Matcher.captures>` gives that pattern.

**The most specific template** of a topic, among those that match it: compared level by level
from the left, a literal level beats a one-level wildcard, which beats a many-level one, and a
template that ends beats one that goes on (``a/b`` before ``a/+`` before ``a/#``; ``a`` before
``a/#`` on the topic ``a``; ``a/+/#`` before ``a/#``). Two templates of one shape that match one
topic (amqp's ``#.a.#`` and ``#.b.#`` on ``a.b``) are ordered by their pattern's text.

>>> router = Router("mqtt")
>>> router.add("sensors/{device}/temp", "thermometer")
Template('sensors/{device}/temp', 'mqtt')
>>> router.add("sensors/{device}/{rest+}", "logger")
Template('sensors/{device}/{rest+}', 'mqtt')
>>> found = router.route("sensors/kitchen/temp")
>>> found.handler, found.captures
('thermometer', {'device': 'kitchen'})
>>> router.route("sensors/kitchen/humidity/raw").captures
{'device': 'kitchen', 'rest': ('humidity', 'raw')}
>>> print(router.route("lights/kitchen"))
None
"""

from __future__ import annotations

import re
import threading
from typing import Generic, NamedTuple, TypeVar

from ._captures import Value, capture
from ._dialects import Dialect, make_dialect, plain
from ._errors import ConfigurationError, InvalidPatternError, shortened
from ._matcher import Matcher
from ._typevars import Text

__all__ = ["Route", "Router", "Template"]

H = TypeVar("H")

#: Each dialect's one-level and many-level wildcards, as a template's names stand for them.
_WILDCARDS = {"amqp": ("*", "#"), "mqtt": ("+", "#"), "nats": ("*", ">")}
_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(\+?)\}")
#: A level's rank in the order of specificity (module docstring): lower is more specific.
_LITERAL, _ONE, _MANY = 0, 1, 2


class Template:
    """A pattern with named wildcards (module docstring); immutable.

    ``text`` is the template as written, ``pattern`` the dialect's pattern it stands for,
    ``names`` its names left to right. Raises :class:`~topicmatch.InvalidPatternError` for a
    bad name or a pattern the dialect refuses, :class:`~topicmatch.ConfigurationError` for an
    unknown dialect. O(the template's length).

    >>> t = Template("orders.{region}.{rest+}", "nats")
    >>> t.pattern, t.names
    ('orders.*.>', ('region', 'rest'))
    >>> t.match("orders.eu.paid.card")
    {'region': 'eu', 'rest': ('paid', 'card')}
    >>> print(t.match("orders.eu"))
    None
    """

    __slots__ = ("_dialect", "_slots", "names", "pattern", "rank", "text")

    def __init__(self, text: Text, dialect: str | Dialect = "mqtt") -> None:
        rules = dialect if isinstance(dialect, Dialect) else make_dialect(dialect)
        given: object = text  # anything a caller passed: checked here
        if not isinstance(given, str):
            raise InvalidPatternError(
                rules.name, shortened(repr(given)), f"a template is a str, not {type(given).__name__}"
            )
        source = plain(given)
        one, many = _WILDCARDS[rules.name]
        levels = source.split(rules.separator)
        names: list[str] = []
        slots: list[str | None] = []  # per wildcard, left to right: its name, or None
        rank: list[int] = []
        pattern: list[str] = []
        for level in levels:
            named = _NAME.fullmatch(level)
            if named is None and level.startswith("{") and level.endswith("}"):
                raise InvalidPatternError(
                    rules.name, source, f"{level!r} is not a name: write {{name}} or {{name+}}"
                )
            if named is not None:
                name = named.group(1)
                if name in names:
                    raise InvalidPatternError(rules.name, source, f"the name {name!r} is used twice")
                names.append(name)
                slots.append(name)
                level = many if named.group(2) else one
            elif level in (one, many):
                slots.append(None)
            pattern.append(level)
            rank.append(_MANY if level == many else _ONE if level == one else _LITERAL)
        made = rules.separator.join(pattern)
        try:
            rules.parse_pattern(made)  # the dialect's verdict, its reason said of the template
        except InvalidPatternError as error:
            raise InvalidPatternError(rules.name, source, error.reason) from None
        for name, value in (
            ("pattern", made),
            ("text", source),
            ("names", tuple(names)),
            ("rank", tuple(rank)),
            ("_slots", tuple(slots)),
            ("_dialect", rules),
        ):
            object.__setattr__(self, name, value)

    pattern: str
    text: str
    names: tuple[str, ...]
    rank: tuple[int, ...]
    _slots: tuple[str | None, ...]
    _dialect: Dialect

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Template is immutable: make another (cannot set {name!r})")

    def __repr__(self) -> str:
        return f"Template({self.text!r}, {self._dialect.name!r})"

    def match(self, topic: Text) -> dict[str, Value] | None:
        """The values of the names in ``topic`` (``{name}`` a word, ``{name+}`` a tuple of
        words), or None if the template does not match it. Raises the dialect's
        :class:`~topicmatch.InvalidTopicError` for a topic it refuses. O(levels x words)."""
        values = capture(self.pattern, topic, self._dialect)
        if values is None:
            return None
        # nats's '>' is one value for two tokens; every other wildcard one value for one slot.
        return {name: value for name, value in zip(self._slots, values, strict=True) if name is not None}


class Route(NamedTuple, Generic[H]):
    """The template that matched a topic, its handler and what its names bound."""

    template: Template
    handler: H
    captures: dict[str, Value]


class Router(Generic[H]):
    """Templates with their handlers; :meth:`route` sends a topic to the most specific one
    (module docstring).

    Lookups go through a :class:`~topicmatch.Matcher` of the templates' patterns (the default
    engine), so a route costs a lookup plus, for the k templates that match, O(k x levels) to
    order them and O(levels x words) to bind the chosen one. Thread-safe: writers take a lock,
    readers none (a template added or removed during a call may be among its results or not).
    """

    def __init__(self, dialect: Text = "mqtt") -> None:
        self._matcher: Matcher[str] = Matcher(dialect=dialect)  # its ConfigurationError first
        self._dialect = make_dialect(self._matcher.dialect)
        self._routes: dict[str, tuple[Template, H]] = {}  # by pattern
        self._writes = threading.Lock()

    def __len__(self) -> int:
        return len(self._routes)

    def __repr__(self) -> str:
        return f"<Router {self._dialect.name} of {len(self)} templates>"

    def add(self, template: Text, handler: H) -> Template:
        """Route the topics ``template`` matches to ``handler``; the :class:`Template`. Raises
        :class:`~topicmatch.InvalidPatternError` for a bad template, and
        :class:`~topicmatch.ConfigurationError` for one whose pattern is routed already
        (``a/{x}`` and ``a/{y}`` are one pattern); nothing changes then."""
        made = Template(template, self._dialect)
        with self._writes:
            held = self._routes.get(made.pattern)
            if held is not None:
                raise ConfigurationError(
                    f"template {made.text!r}: its pattern {made.pattern!r} is routed already "
                    f"(as {held[0].text!r}); remove that one first"
                )
            self._routes[made.pattern] = (made, handler)
            self._matcher.subscribe(made.pattern, made.pattern)
        return made

    def remove(self, template: Text) -> bool:
        """Stop routing ``template`` (or any template of its pattern); whether one was routed."""
        made = Template(template, self._dialect)
        with self._writes:
            if made.pattern not in self._routes:
                return False
            self._matcher.unsubscribe(made.pattern, made.pattern)
            del self._routes[made.pattern]
        return True

    def routes(self, topic: Text) -> list[Route[H]]:
        """Every template that matches ``topic``, the most specific first (module docstring).
        Raises the dialect's :class:`~topicmatch.InvalidTopicError` for a topic it refuses."""
        return [_bound(entry, topic) for entry in sorted(self._matching(topic), key=_specificity)]

    def route(self, topic: Text) -> Route[H] | None:
        """The most specific template that matches ``topic`` (module docstring), or None.
        Raises as :meth:`routes` does."""
        held = self._matching(topic)
        return _bound(min(held, key=_specificity), topic) if held else None

    def _matching(self, topic: Text) -> list[tuple[Template, H]]:
        found = [self._routes.get(pattern) for pattern in self._matcher.lookup(topic)]
        return [entry for entry in found if entry is not None]  # None: removed meanwhile


def _bound(entry: tuple[Template, H], topic: Text) -> Route[H]:
    template, handler = entry
    captures = template.match(topic)
    assert captures is not None  # the matcher said it matches: capture agrees (module docstring)
    return Route(template, handler, captures)


def _specificity(entry: tuple[Template, object]) -> tuple[tuple[int, ...], str]:
    """The order of :meth:`Router.routes`: the ranks of the levels (a template that ends sorts
    before one that goes on: a shorter tuple first), then the pattern's text."""
    template = entry[0]
    return template.rank, template.pattern
