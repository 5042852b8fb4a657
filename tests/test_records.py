"""``quick_init``: a frozen dataclass built by it behaves as one built by dataclasses."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import pytest

from callgate.reassemble.codes import Code
from callgate.reassemble.findings import Finding, Severity
from callgate.reassemble.records import quick_init


def _record_class() -> Any:
    @dataclass(frozen=True)
    class Record:
        code: str
        count: int
        note: str | None = None
        tags: list[str] = field(default_factory=list)

    return Record


#: The same class twice: with dataclasses' own __init__, and with quick_init's.
Plain, Quick = _record_class(), quick_init(_record_class())


def _keyword_record_class() -> Any:
    @dataclass(frozen=True)
    class KeywordRecord:
        code: str
        _: KW_ONLY
        note: str | None = None
        count: int
        tags: list[str] = field(default_factory=list)

    return KeywordRecord


#: A class with keyword-only fields (a required one after one with a default), twice.
PlainKeywords, QuickKeywords = _keyword_record_class(), quick_init(_keyword_record_class())


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("a", 1), {}),
    (("a", 1, "n"), {}),
    (("a", 1, None, ["t"]), {}),
    (("a",), {"count": 2}),
    ((), {"code": "a", "count": 2, "tags": ["x"]}),
    (("a", 1), {"note": "n"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_same_arguments_make_the_same_record(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
    assert repr(quick) == repr(plain)
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert quick == Quick(*args, **kwargs)
    assert quick != Quick("other", 0)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("a", 1, None, [], "extra"), {}),
        (("a", 1), {"colour": 1}),
        (("a", 1), {"code": "b"}),
    ],
)
def test_wrong_arguments_raise_what_dataclasses_raises(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError) as plain:
        Plain(*args, **kwargs)
    with pytest.raises(TypeError) as quick:
        Quick(*args, **kwargs)
    assert str(quick.value) == str(plain.value)


KEYWORD_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("a",), {"count": 1}),
    (("a",), {"count": 1, "note": "n", "tags": ["t"]}),
    ((), {"tags": [], "count": 2, "code": "a"}),
]


@pytest.mark.parametrize(("args", "kwargs"), KEYWORD_CALLS)
def test_keyword_only_fields_make_the_same_record(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    quick, plain = QuickKeywords(*args, **kwargs), PlainKeywords(*args, **kwargs)
    assert repr(quick) == repr(plain)
    assert vars(quick) == vars(plain) and list(vars(quick)) == list(vars(plain))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a", 1), {}),
        (("a",), {}),
        (("a",), {"count": 1, "colour": 1}),
        (("a", None), {"count": 1}),
    ],
)
def test_wrong_keyword_arguments_raise_what_dataclasses_raises(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError) as plain:
        PlainKeywords(*args, **kwargs)
    with pytest.raises(TypeError) as quick:
        QuickKeywords(*args, **kwargs)
    assert str(quick.value) == str(plain.value)


def test_the_parameters_are_dataclasses_parameters() -> None:
    def shape(cls: type) -> list[tuple[str, Any, bool]]:
        return [
            (p.name, p.kind, p.default is inspect.Parameter.empty)
            for p in inspect.signature(cls).parameters.values()
        ]

    assert shape(Quick) == shape(Plain)
    assert shape(QuickKeywords) == shape(PlainKeywords)
    assert [p.kind.name for p in inspect.signature(QuickKeywords).parameters.values()] == [
        "POSITIONAL_OR_KEYWORD",
        *["KEYWORD_ONLY"] * 3,
    ]
    assert Quick.__init__.__qualname__ == Plain.__init__.__qualname__
    # Where it is defined, as dataclasses says of its own (``inspect.getmodule``, pydoc).
    assert Quick.__init__.__module__ == Plain.__init__.__module__ == __name__


def test_each_record_gets_a_fresh_default_from_the_factory() -> None:
    first, second = Quick("a", 1), Quick("a", 1)
    assert first.tags == [] and first.tags is not second.tags


def test_the_record_stays_frozen_hashable_picklable_and_replaceable() -> None:
    record = Quick("a", 1, "n", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.code = "b"
    assert hash(record) == hash(Quick("a", 1, "n", None))
    assert dataclasses.replace(record, count=2) == Quick("a", 2, "n", None)
    # Pickled as dataclasses pickle: a finding, as replay's workers send them.
    finding = Finding(
        code=Code.DUPLICATE_KEY,
        message="m",
        severity=Severity.BLOCKING,
        choice=0,
        slot=1,
        event=2,
        path="/p",
        quirk=None,
        detail={"k": "v"},
    )
    assert pickle.loads(pickle.dumps(finding)) == finding


def test_what_the_quick_init_would_not_honour_is_refused() -> None:
    @dataclass
    class Mutable:
        code: str

    @dataclass(frozen=True)
    class Checked:
        code: str

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class Slotted:
        code: str

    @dataclass(frozen=True)
    class Derived:
        code: str
        size: int = field(init=False, default=0)

    for cls in (Mutable, Checked, Slotted, Derived, int):
        with pytest.raises(TypeError, match=cls.__name__):
            quick_init(cls)
