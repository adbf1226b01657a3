"""Plain data classes for what a warm, fully cached run touches, without ``dataclasses``.

Importing ``dataclasses`` pulls in ``inspect``, ``ast`` and ``dis``: about 6 ms of a
cached run that takes about 60 ms in all, most of it interpreter start-up. The few
classes such a run needs (findings, fixes, file results, settings) are declared with
``@record`` instead: fields from the class annotations, in order, with defaults;
``factory(list)`` gives each instance its own default. A record gets ``__init__``
(positional or keyword), ``__repr__`` and ``__eq__``; a frozen one also refuses
assignment and is hashable. ``replace()`` and ``asdict()`` work as their
``dataclasses`` namesakes do.
"""

from __future__ import annotations

_MISSING = object()


class factory:
    """A default made fresh for every instance (``dataclasses.field(default_factory=...)``)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


class FrozenInstanceError(AttributeError):
    pass


def record(cls=None, *, frozen: bool = False):
    def wrap(cls):
        names = tuple(n for n, a in cls.__dict__.get("__annotations__", {}).items()
                      if not str(a).startswith(("ClassVar", "typing.ClassVar")))
        defaults = {}
        for name in names:
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
                if isinstance(defaults[name], factory):
                    delattr(cls, name)
        required = [n for n in names if n not in defaults]
        fieldset = frozenset(names)
        qualname = cls.__qualname__

        def __init__(self, *args, **kwargs):
            if len(args) > len(names):
                raise TypeError(f"{qualname}() takes {len(names)} positional arguments but {len(args)} were given")
            values = dict(zip(names, args))
            for key, value in kwargs.items():
                if key not in fieldset:
                    raise TypeError(f"{qualname}() got an unexpected keyword argument {key!r}")
                if key in values:
                    raise TypeError(f"{qualname}() got multiple values for argument {key!r}")
                values[key] = value
            missing = [n for n in required if n not in values]
            if missing:
                raise TypeError(f"{qualname}() missing required argument(s): {', '.join(map(repr, missing))}")
            put = object.__setattr__
            for name in names:
                if name in values:
                    put(self, name, values[name])
                else:
                    default = defaults[name]
                    put(self, name, default.make() if isinstance(default, factory) else default)

        def _values(self):
            return tuple(getattr(self, n) for n in names)

        def __repr__(self):
            return f"{qualname}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return _values(self) == _values(other)

        cls.__init__ = __init__
        cls.__repr__ = __repr__
        cls.__eq__ = __eq__
        cls.__record_fields__ = names
        if frozen:
            def __setattr__(self, name, value):
                raise FrozenInstanceError(f"cannot assign to field {name!r} of frozen {qualname}")

            def __delattr__(self, name):
                raise FrozenInstanceError(f"cannot delete field {name!r} of frozen {qualname}")

            cls.__setattr__ = __setattr__
            cls.__delattr__ = __delattr__
            cls.__hash__ = lambda self: hash(_values(self))
        else:
            cls.__hash__ = None  # mutable and compared by value, as a dataclass
        return cls

    return wrap if cls is None else wrap(cls)


def fields(obj) -> tuple[str, ...]:
    return obj.__record_fields__


def replace(obj, **changes):
    """A copy of ``obj`` with some fields changed."""
    values = {n: getattr(obj, n) for n in obj.__record_fields__}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field(s) {', '.join(sorted(unknown))}")
    values.update(changes)
    return type(obj)(**values)


def asdict(obj):
    """Fields as a dict, recursively through records, lists, tuples and dicts."""
    if hasattr(type(obj), "__record_fields__"):
        return {n: asdict(getattr(obj, n)) for n in obj.__record_fields__}
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {k: asdict(v) for k, v in obj.items()}
    return obj
