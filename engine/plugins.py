"""One registry idiom for every kind of plug-in: strategies, backends, simulator tasks.

A plug-in registers itself with a decorator when its module is imported (``@strategy``,
``@provider``, ``@sim.task``). A package makes its modules known through an entry-point group
(``unseen.strategies``, ``unseen.backends``, ``unseen.sim_tasks``) whose entries name those
modules; the built-ins are listed there too (pyproject.toml), so an outside package adds one
exactly as the project does::

    [project.entry-points."unseen.backends"]
    my-provider = "my_package.backend"     # a module whose @provider decorators register

An entry may also name an object (``my_package.bench:BENCHMARK``): the registry then holds
that object under the entry's name.

A :class:`Registry` imports every module of its group before it answers its first lookup,
so what it holds never depends on which module happened to be imported first. A
registration made in process (a test's ``@strategy``, whenever it runs) wins over one that a
module of the group makes while the group loads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, MutableMapping
from importlib.metadata import entry_points
from typing import TypeVar

from .errors import UnseenError

T = TypeVar("T")


class PluginError(UnseenError):
    """An entry point that names a module that cannot be imported."""


class Registry(MutableMapping[str, T]):
    """Named plug-ins of one kind, found through the entry-point group ``group``.

    A mapping: ``reg[name] = item`` registers (the decorators do this), ``reg[name]`` and
    ``name in reg`` look up, iteration lists names. A lookup imports the group's modules
    first (once per process; :meth:`refresh` reads the group again)."""

    def __init__(self, group: str, kind: str, defaults: Mapping[str, T] | None = None):
        self.group = group
        self.kind = kind  # what one item is, for messages: "strategy", "provider", ...
        self._items: dict[str, T] = dict(defaults or {})
        self._loaded = False
        self._loader: int | None = None  # the thread importing the group, while it does
        # lookups come from several threads (overlays are drawn off the event loop): one
        # imports the group while the others wait for it, never see it half loaded
        self._lock = threading.RLock()
        self._explicit: set[str] = set()  # registered outside a load: the group never overrides

    @property
    def _loading(self) -> bool:
        return self._loader == threading.get_ident()

    def load(self) -> None:
        """Import every module the group names (once); their decorators register. Other
        threads wait until it is done; a lookup that the loading itself makes (a module of
        the group asking the registry) answers from what has registered so far."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loader = threading.get_ident()
            try:
                for ep in entry_points(group=self.group):
                    try:
                        obj = ep.load()
                    except Exception as exc:  # a broken plug-in names itself, not a traceback
                        raise PluginError(
                            f"entry point {ep.name} = {ep.value} of {self.group} cannot be "
                            f"loaded: {type(exc).__name__}: {exc}") from exc
                    if ep.attr:  # ``module:object``: the object is the plug-in
                        self[ep.name] = obj
                self._loaded = True
            finally:
                self._loader = None

    def refresh(self) -> None:
        """Read the group again (a package installed since the first lookup)."""
        self._loaded = False
        self.load()

    def __getitem__(self, name: str) -> T:
        self.load()
        return self._items[name]

    def __setitem__(self, name: str, item: T) -> None:
        # no load here: registering must not import the whole group (nor recurse into it)
        if self._loading:
            if name in self._explicit:
                return  # registered in process before the group loaded: that one stays
        else:
            self._explicit.add(name)
        self._items[name] = item

    def __delitem__(self, name: str) -> None:
        self._explicit.discard(name)
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(list(self._items))

    def __len__(self) -> int:
        self.load()
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    def register(self, name: str):
        """A decorator: ``@reg.register("name")`` puts the decorated object under ``name``."""

        def deco(item: T) -> T:
            self[name] = item
            return item

        return deco

    def unknown(self, name: str) -> str:
        """The one-line message for a name nobody registered."""
        return f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self)) or 'none'}"

    def __repr__(self) -> str:
        return f"Registry({self.group!r}, {sorted(self._items)})"
