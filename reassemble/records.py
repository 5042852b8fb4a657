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
    """Give the frozen dataclass ``cls`` an ``__init__`` that sets its fields in one step.
    Refuses (``TypeError``) what that ``__init__`` would not honour: a class that is not a
    frozen dataclass, ``__post_init__``, ``__slots__``, and fields that are keyword-only or
    left out of ``__init__``."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (
        hasattr(cls, "__post_init__")
        or "__slots__" in cls.__dict__
        or any(
            not field.init
            or field.kw_only
            or field.name.startswith("_")
            or field.name in ("self", "members")
            for field in fields
        )
    ):
        raise TypeError(f"{cls.__name__} needs dataclasses' own __init__")
    namespace: dict[str, Any] = {"_unset": _UNSET}
    parameters, factories = [], []
    for field in fields:
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{field.name}"] = field.default
            parameters.append(f"{field.name}=_default_{field.name}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{field.name}"] = field.default_factory
            parameters.append(f"{field.name}=_unset")
            factories.append(
                f"    if {field.name} is _unset:\n        {field.name} = _factory_{field.name}()\n"
            )
        else:
            parameters.append(field.name)
    # Generated as dataclasses generates its own: a function with these exact parameters. Each
    # field goes straight into the instance's dictionary, which its __setattr__ never sees.
    stores = "".join(f"    members[{field.name!r}] = {field.name}\n" for field in fields)
    exec(
        f"def __init__(self, {', '.join(parameters)}):\n"
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
