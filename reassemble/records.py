"""``quick_init``: frozen dataclasses almost as quick to build as plain ones.

For a frozen class, dataclasses writes an ``__init__`` that sets each field through
``object.__setattr__`` (the class's own ``__setattr__`` refuses): a call per field, several
times what storing the fields straight costs. Every turn builds some of these records (findings,
calls, its report; replay an outcome per fixture), so they take this ``__init__`` instead: the
same parameters, defaults and default factories, each field stored straight into the instance's
dictionary. Everything else (refused assignment, equality, hashing, ``repr``, pickling,
``dataclasses.replace``) is dataclasses' own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

_Record = TypeVar("_Record")
_UNSET: Any = object()


def quick_init(cls: type[_Record]) -> type[_Record]:
    """Give the frozen dataclass ``cls`` an ``__init__`` that sets its fields in one step, with
    dataclasses' parameters: the positional fields in order, then the keyword-only ones.
    Refuses (``TypeError``) what that ``__init__`` would not honour: a class that is not a
    frozen dataclass, ``__post_init__``, ``__slots__``, fields left out of ``__init__``, and
    field names the generated ``__init__`` uses itself (``self``, ``members``, a leading
    ``_``)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (
        hasattr(cls, "__post_init__")
        or "__slots__" in cls.__dict__
        or any(
            not field.init or field.name.startswith("_") or field.name in ("self", "members")
            for field in fields
        )
    ):
        raise TypeError(f"{cls.__name__} needs dataclasses' own __init__")
    namespace: dict[str, Any] = {"_unset": _UNSET}
    positional: list[str] = []
    keyword_only: list[str] = []
    factories: list[str] = []
    for field in fields:
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{field.name}"] = field.default
            parameter = f"{field.name}=_default_{field.name}"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{field.name}"] = field.default_factory
            parameter = f"{field.name}=_unset"
            factories.append(
                f"    if {field.name} is _unset:\n        {field.name} = _factory_{field.name}()\n"
            )
        else:
            parameter = field.name
        (keyword_only if field.kw_only else positional).append(parameter)
    # Generated as dataclasses generates its own: a function with these exact parameters (every
    # positional field, then the keyword-only ones after ``*``). Each field goes straight into
    # the instance's dictionary, which its __setattr__ never sees.
    parameters = ["self", *positional, *(["*", *keyword_only] if keyword_only else [])]
    stores = "".join(f"    members[{field.name!r}] = {field.name}\n" for field in fields)
    exec(
        f"def __init__({', '.join(parameters)}):\n"
        + "".join(factories)
        + "    members = self.__dict__\n"
        + stores,
        namespace,
    )
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
