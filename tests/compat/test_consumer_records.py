"""The aiokafka compat consumer's records: built without the dataclass ``__init__`` per record
(in C when ``_ccompat`` is built), yet the same dataclass instances as before, and the same
deserializer errors.  No broker needed."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from aiokafkawire._compiled import load_accelerator
from aiokafkawire.compat.aiokafka.consumer import _records
from aiokafkawire.compat.aiokafka.structs import ConsumerRecord
from aiokafkawire.consumer import ConsumerRecord as NativeRecord

_COMPILED: Any = load_accelerator("aiokafkawire.compat.aiokafka.consumer._ccompat")
# The pure twin always; the compiled one when it is built (this machine has a compiler).
BUILDERS = [_records._pure_records] + ([_COMPILED.compat_records] if _COMPILED else [])
HEADERS = (("h", b"x"), ("none", None))
NATIVES = [
    NativeRecord("t", 0, 7, 1_700_000_000_000, 0, b"key", b"value", (), 3),
    NativeRecord("t", 1, 8, 1_700_000_000_001, 1, None, None, HEADERS, None),
    NativeRecord("t", 2, 9, -1, -1, b"", b"v" * 300, HEADERS, 0),
]


def _dataclass_init(native: NativeRecord, key: Any = None, value: Any = None) -> Any:
    """The construction the compat consumer used before: the dataclass ``__init__``."""
    return ConsumerRecord(
        native.topic,
        native.partition,
        native.offset,
        native.timestamp,
        native.timestamp_type,
        native.key if key is None else key,
        native.value if value is None else value,
        None,
        -1 if native.key is None else len(native.key),
        -1 if native.value is None else len(native.value),
        native.headers,
    )


def test_the_compiled_twin_is_used_when_built() -> None:
    if _COMPILED is None:
        assert _records.compat_records is _records._pure_records
    else:
        assert _records.compat_records is _COMPILED.compat_records
        assert _records.compat_record is _COMPILED.compat_record


@pytest.mark.parametrize("build", BUILDERS)
def test_records_equal_the_dataclass_init_ones_and_behave_as_dataclasses(build: Any) -> None:
    made = build(ConsumerRecord, list(NATIVES), None, None)
    expected = [_dataclass_init(native) for native in NATIVES]
    assert made == expected
    for record, want in zip(made, expected, strict=True):
        assert type(record) is ConsumerRecord
        assert repr(record) == repr(want)
        assert vars(record) == vars(want)
        assert list(vars(record)) == [f.name for f in dataclasses.fields(ConsumerRecord)]
        assert dataclasses.asdict(record) == dataclasses.asdict(want)
        assert pickle.loads(pickle.dumps(record)) == want
        assert copy.deepcopy(record) == want
        assert dataclasses.replace(record, offset=99).offset == 99
        record.value = b"changed"  # plain attribute assignment, extra attributes too
        record.extra = 1  # type: ignore[attr-defined]
        assert record.value == b"changed" and record.extra == 1  # type: ignore[attr-defined]
    assert made[1].serialized_key_size == -1 and made[1].serialized_value_size == -1
    assert made[2].serialized_key_size == 0 and made[2].serialized_value_size == 300
    assert made[0].checksum is None and made[1].headers == HEADERS


@pytest.mark.parametrize("build", BUILDERS)
def test_deserializers_get_the_raw_payloads_and_sizes_stay_raw(build: Any) -> None:
    def key_des(raw: bytes | None) -> Any:
        return None if raw is None else raw.decode().upper()

    def value_des(raw: bytes | None) -> Any:
        return {"len": None if raw is None else len(raw)}

    made = build(ConsumerRecord, list(NATIVES), key_des, value_des)
    assert [r.key for r in made] == ["KEY", None, ""]
    assert [r.value for r in made] == [{"len": 5}, {"len": None}, {"len": 300}]
    assert [r.serialized_value_size for r in made] == [5, -1, 300]
    one = _records.compat_record(ConsumerRecord, NATIVES[0], key_des, value_des)
    assert one == _dataclass_init(NATIVES[0], "KEY", {"len": 5})


class _Bad(Exception):
    pass


@pytest.mark.parametrize("build", BUILDERS)
def test_a_deserializer_error_propagates_unchanged(build: Any) -> None:
    raised = _Bad("not json")

    def value_des(raw: bytes | None) -> Any:
        if raw == b"v" * 300:
            raise raised
        return raw

    with pytest.raises(_Bad) as info:
        build(ConsumerRecord, list(NATIVES), None, value_des)
    assert info.value is raised
    with pytest.raises(_Bad):
        _records.compat_record(ConsumerRecord, NATIVES[2], None, value_des)


@pytest.mark.skipif(_COMPILED is None, reason="the _ccompat extension is not built")
def test_the_compiled_twin_refuses_what_it_cannot_build() -> None:
    with pytest.raises(TypeError, match="ConsumerRecord tuples"):
        _COMPILED.compat_records(ConsumerRecord, [("t", 0)], None, None)
    with pytest.raises(TypeError, match="__new__ and __setattr__"):
        _COMPILED.compat_record(int, NATIVES[0], None, None)

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        topic: str

    with pytest.raises(TypeError, match="__new__ and __setattr__"):
        _COMPILED.compat_records(Frozen, list(NATIVES), None, None)


@pytest.mark.skipif(_COMPILED is None, reason="the _ccompat extension is not built")
def test_a_list_only_the_converter_holds_is_converted_in_place_a_shared_one_never() -> None:
    shared = list(NATIVES)
    made = _COMPILED.compat_records(ConsumerRecord, shared, None, None)
    assert made is not shared and shared == NATIVES  # the caller's list is left alone
    batches = {"tp": list(NATIVES)}
    inner = id(batches["tp"])
    made = _COMPILED.compat_records(ConsumerRecord, batches.pop("tp"), None, None)
    assert id(made) == inner  # popped into the call: the same list, now of compat records
    assert made == [_dataclass_init(native) for native in NATIVES]
    assert all(type(record) is ConsumerRecord for record in made)
    # A deserializer runs Python code: the list is copied then, never seen half converted.
    batches = {"tp": list(NATIVES)}
    inner = id(batches["tp"])
    made = _COMPILED.compat_records(ConsumerRecord, batches.pop("tp"), None, lambda raw: raw)
    assert id(made) != inner and [r.value for r in made] == [b"value", None, b"v" * 300]
