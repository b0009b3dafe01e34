"""Test helper: drive kafka-python 3.x's protocol codec from the official Kafka message specs.

kafka-python 3.x generates its message classes at runtime from its own copy of the Kafka JSON
specs; it is an implementation independent of ours.  This module

* reads the official specs (vendored in ``specs/``, exactly as ``tools/gen_messages.py`` prepares
  them: stable versions of Kafka 4.4.0 plus the old versions from Kafka 3.9.2) into a small field
  model,
* generates a deterministic, non-trivial *logical value* for a message in a given version (plain
  dicts, lists and scalars keyed by snake_case field names; every field present in that version
  gets a non-default value, nested arrays are non-empty, tagged fields are set),
* builds kafka-python objects from such values, encodes them, and turns decoded kafka-python
  objects back into logical values.

* builds our generated objects from logical values and back (``ours_build``/``ours_value``).

kafka-python is imported lazily, so the spec and value helpers work without it.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import random
import re
import sys
import uuid
import warnings
import zlib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
SIMPLE_TYPES = {*INT_RANGES, "bool", "string", "bytes", "records", "uuid", "float64"}
ZERO_UUID = uuid.UUID(int=0)
_COMMENT = re.compile(r"(?m)^\s*//.*$")
# Characters for generated strings: ASCII, 2-, 3- and 4-byte UTF-8 sequences.
_STRING_ALPHABET = "abcXYZ019-._ éßΩж中文🙂"


def parse_versions(text: str | None) -> tuple[int, int] | None:
    """Parse a spec version range ("3+", "0-2", "5", "none") into inclusive bounds."""
    if text is None:
        return None
    text = text.strip()
    if text in ("", "none"):
        return None
    if text.endswith("+"):
        return int(text[:-1]), 2**15 - 1
    if "-" in text:
        low, high = text.split("-")
        return int(low), int(high)
    return int(text), int(text)


def in_range(bounds: tuple[int, int] | None, version: int) -> bool:
    """True if ``version`` lies in the (possibly absent) inclusive range."""
    return bounds is not None and bounds[0] <= version <= bounds[1]


def snake_case(name: str) -> str:
    """Spec field name to our attribute name (``TopicId`` -> ``topic_id``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@dataclass
class SpecField:
    """One field of a spec struct."""

    name: str
    type: str
    versions: tuple[int, int] | None
    nullable: tuple[int, int] | None
    tagged: tuple[int, int] | None
    tag: int | None
    default: Any
    raw_default: str
    fields: list[SpecField] | None = None  # for struct and struct-array types
    compact_override: bool | None = None  # field-level "flexibleVersions": "none"

    @property
    def attr(self) -> str:
        """snake_case attribute name."""
        return snake_case(self.name)

    @property
    def is_array(self) -> bool:
        """Array of anything."""
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """Type of the array elements (or the type itself)."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """A struct or an array of structs."""
        return self.fields is not None

    def present(self, version: int) -> bool:
        """Whether the field exists in ``version``."""
        return in_range(self.versions, version)

    def is_tagged(self, version: int) -> bool:
        """Whether the field is a tagged field in ``version``."""
        return self.tag is not None and in_range(self.tagged, version)

    def is_nullable(self, version: int) -> bool:
        """Whether null is allowed in ``version``."""
        return in_range(self.nullable, version)


@dataclass
class MessageSpec:
    """A parsed spec file."""

    name: str
    type: str  # "request", "response", "header", "data"
    api_key: int | None
    valid: tuple[int, int]
    flexible: tuple[int, int] | None
    fields: list[SpecField] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    def is_flexible(self, version: int) -> bool:
        """Whether ``version`` uses the compact/tagged encodings."""
        return in_range(self.flexible, version)

    def versions(self) -> range:
        """All valid versions."""
        return range(self.valid[0], self.valid[1] + 1)


def _default_value(type_name: str, raw: Any) -> Any:
    text = "" if raw is None else str(raw)
    if type_name.startswith("[]"):
        return None if text == "null" else []
    if type_name in INT_RANGES:
        return int(text, 0) if text else 0
    if type_name == "bool":
        return text.lower() == "true"
    if type_name == "float64":
        return float(text) if text else 0.0
    if type_name == "string":
        return None if text == "null" else text
    if type_name in ("bytes", "records"):
        return None if text == "null" else b""
    if type_name == "uuid":
        return ZERO_UUID if not text else uuid.UUID(text)
    return None if text == "null" else "<struct>"


def _parse_fields(raw_fields: list[dict[str, Any]], common: dict[str, Any]) -> list[SpecField]:
    result = []
    for raw in raw_fields:
        type_name = raw["type"]
        element = type_name[2:] if type_name.startswith("[]") else type_name
        sub = raw.get("fields")
        if sub is None and element in common:
            sub = common[element]
        compact = raw.get("flexibleVersions")
        result.append(
            SpecField(
                name=raw["name"],
                type=type_name,
                versions=parse_versions(raw.get("versions")),
                nullable=parse_versions(raw.get("nullableVersions")),
                tagged=parse_versions(raw.get("taggedVersions")),
                tag=raw.get("tag"),
                default=_default_value(type_name, raw.get("default")),
                raw_default=str(raw.get("default", "")),
                fields=_parse_fields(sub, common) if sub is not None else None,
                compact_override=(False if compact == "none" else None),
            )
        )
    return result


def load_generator(name: str, *, stay_registered: bool) -> Any:
    """``tools/gen_messages.py`` imported as module ``name``.

    It is in ``sys.modules`` while it runs (its dataclasses need that) and afterwards only
    with ``stay_registered``.
    """
    path = REPO_ROOT / "tools" / "gen_messages.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if not stay_registered:
            del sys.modules[name]
    return module


@cache
def _generator() -> Any:
    """The generator as a module (it prepares the specs the codecs come from)."""
    return load_generator("gen_messages_for_bridge", stay_registered=True)


def load_raw_spec(name: str) -> dict[str, Any]:
    """The JSON of spec ``name`` as the generator uses it (stable and legacy versions)."""
    generator = _generator()
    if name.endswith("Response"):
        request = generator.load_spec_json(
            name[: -len("Response")] + "Request", generator.CURRENT_SPECS, generator.LEGACY_SPECS
        )
        bounds = generator.version_bounds(request["validVersions"])
        return dict(
            generator.load_spec_json(
                name, generator.CURRENT_SPECS, generator.LEGACY_SPECS, follow=bounds
            )
        )
    return dict(generator.load_spec_json(name, generator.CURRENT_SPECS, generator.LEGACY_SPECS))


@cache
def load_spec(name: str) -> MessageSpec:
    """Parse the official spec ``<name>.json``."""
    raw = load_raw_spec(name)
    common = {s["name"]: s["fields"] for s in raw.get("commonStructs", [])}
    valid = parse_versions(raw["validVersions"])
    assert valid is not None
    return MessageSpec(
        name=raw["name"],
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid=valid,
        flexible=parse_versions(raw.get("flexibleVersions")),
        fields=_parse_fields(raw["fields"], common),
        raw=raw,
    )


@cache
def api_specs() -> dict[int, tuple[MessageSpec, MessageSpec]]:
    """``{api_key: (request spec, response spec)}`` for every API the generator covers."""
    generator = _generator()
    return {
        api_key: (load_spec(f"{base}Request"), load_spec(f"{base}Response"))
        for api_key, base in generator.client_apis(generator.CURRENT_SPECS)
    }


# ------------------------------------------------------------------------------ value generation


class ValueGenerator:
    """Deterministic non-default values for a spec struct in one version.

    ``nulls=True`` makes every nullable field null (the other variant never uses null), so that
    both encodings of each nullable field get exercised.
    """

    def __init__(self, seed: str, *, nulls: bool = False, max_items: int = 2) -> None:
        self.rng = random.Random(zlib.crc32(seed.encode()))
        self.nulls = nulls
        self.max_items = max_items

    def struct(
        self, fields: list[SpecField], version: int, *, in_tagged: bool = False
    ) -> dict[str, Any]:
        """A value for every field present in ``version``.

        Inside a tagged struct, nested tagged fields keep their defaults: kafka-python writes a
        tagged struct with an empty tagged-field section (its documented simplification).
        """
        value: dict[str, Any] = {}
        for spec_field in fields:
            if not spec_field.present(version):
                continue
            tagged = spec_field.is_tagged(version)
            if in_tagged and tagged:
                continue
            value[spec_field.attr] = self.field(spec_field, version, in_tagged=in_tagged or tagged)
        return value

    def field(self, spec_field: SpecField, version: int, *, in_tagged: bool = False) -> Any:
        """A non-default value for one field."""
        if self.nulls and spec_field.is_nullable(version):
            return None
        if spec_field.is_array:
            count = self.rng.randint(1, self.max_items)
            if spec_field.is_struct:
                assert spec_field.fields is not None
                return [
                    self.struct(spec_field.fields, version, in_tagged=in_tagged)
                    for _ in range(count)
                ]
            return [self.scalar(spec_field.element_type, None) for _ in range(count)]
        if spec_field.is_struct:
            assert spec_field.fields is not None
            return self.struct(spec_field.fields, version, in_tagged=in_tagged)
        return self.scalar(spec_field.type, spec_field.default)

    def scalar(self, type_name: str, default: Any) -> Any:
        """A random value of a simple type, different from ``default``."""
        rng = self.rng
        for _ in range(100):
            value: Any
            if type_name in INT_RANGES:
                low, high = INT_RANGES[type_name]
                # Mix small and full-range numbers: both matter for varint-free fixed encodings.
                value = rng.randint(-300, 300) if rng.random() < 0.3 else rng.randint(low, high)
                value = min(max(value, low), high)
            elif type_name == "bool":
                value = not default if isinstance(default, bool) else rng.random() < 0.5
            elif type_name == "float64":
                value = rng.uniform(-1e9, 1e9)
            elif type_name == "string":
                value = "".join(rng.choice(_STRING_ALPHABET) for _ in range(rng.randint(1, 8)))
            elif type_name in ("bytes", "records"):
                value = rng.randbytes(rng.randint(1, 12))
            elif type_name == "uuid":
                value = uuid.UUID(int=rng.getrandbits(128) | 1)
            else:
                raise AssertionError(f"unknown simple type {type_name}")
            if value != default:
                return value
        raise AssertionError(f"could not find a non-default {type_name}")


def seed_for(*parts: object) -> str:
    """A seed string for a test case."""
    return "/".join(str(part) for part in parts)


# ------------------------------------------------------------------------------ our classes side


def _nested_class(owner: type, type_name: str) -> type:
    return getattr(sys.modules[owner.__module__], type_name.removeprefix("[]"))


def _schema(cls: Any) -> dict[str, tuple[Any, ...]]:
    return {entry[0]: entry for entry in cls._SCHEMA}


def ours_build(cls: type, fields: list[SpecField], value: dict[str, Any]) -> Any:
    """One of our generated objects holding a logical value."""
    schema = _schema(cls)
    kwargs: dict[str, Any] = {}
    for spec_field in fields:
        if spec_field.attr not in value:
            continue
        item = value[spec_field.attr]
        if spec_field.is_struct and item is not None:
            assert spec_field.fields is not None
            sub = _nested_class(cls, schema[spec_field.attr][1])
            if spec_field.is_array:
                item = [ours_build(sub, spec_field.fields, element) for element in item]
            else:
                item = ours_build(sub, spec_field.fields, item)
        kwargs[spec_field.attr] = item
    return cls(**kwargs)


def ours_value(obj: Any, fields: list[SpecField], version: int) -> dict[str, Any]:
    """The logical value of one of our objects (fields present in ``version`` only)."""
    value: dict[str, Any] = {}
    for spec_field in fields:
        if not spec_field.present(version):
            continue
        item = getattr(obj, spec_field.attr)
        if spec_field.is_struct and item is not None:
            assert spec_field.fields is not None
            if spec_field.is_array:
                item = [ours_value(element, spec_field.fields, version) for element in item]
            else:
                item = ours_value(item, spec_field.fields, version)
        value[spec_field.attr] = item
    return value


# ------------------------------------------------------------------------------ kafka-python side


@dataclass
class KpMessage:
    """A kafka-python message class and where it came from."""

    cls: Any
    origin: str  # "kafka-python" (its own spec copy and class) or "official-spec" (its engine)
    spec_valid: tuple[int, int]  # versions kafka-python's own spec copy declares


@cache
def kafka_python_classes() -> dict[tuple[int, str], Any]:
    """kafka-python's own message classes by ``(api_key, "request"|"response")``."""
    import pkgutil

    import kafka.protocol as kp_protocol
    from kafka.protocol.api_message import ApiMessage

    found: dict[tuple[int, str], Any] = {}
    for module_info in pkgutil.walk_packages(kp_protocol.__path__, "kafka.protocol."):
        name = module_info.name
        if ".old" in name or name.endswith(("generate_stubs", "parser")):
            continue  # legacy hand-written structs and tooling, not the spec-driven classes
        with warnings.catch_warnings():
            # kafka-python reads its bundled specs through deprecated importlib.resources calls.
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, ApiMessage)
                and obj.__module__ == name
                and getattr(obj, "_json", None) is not None
            ):
                json_spec: dict[str, Any] = getattr(obj, "_json")  # noqa: B009
                found[(json_spec["apiKey"], json_spec["type"])] = obj
    return found


_ENGINE_CLASSES: dict[str, Any] = {}


def kafka_python_engine_class(spec_name: str) -> Any:
    """A kafka-python ``ApiMessage`` class built by its engine from *our* official spec file.

    Used for APIs or versions that kafka-python's own spec copy lacks: the encoder/decoder is still
    kafka-python's independent implementation, fed with the official JSON.  kafka-python's
    metaclass loads the JSON named after the class and then applies ``json_patch``; we name the
    class after a spec it has and swap in ours through the patch hook.
    """
    if spec_name in _ENGINE_CLASSES:
        return _ENGINE_CLASSES[spec_name]
    from kafka.protocol.api_header import ResponseClassRegistry
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.schemas.load_json import _resolve_common_structs

    raw = load_raw_spec(spec_name)
    common = {s["name"]: s["fields"] for s in raw.get("commonStructs", [])}
    if common:
        _resolve_common_structs(raw.get("fields", []), common)

    def json_patch(cls: Any, _their_json: dict[str, Any]) -> dict[str, Any]:
        return raw

    carrier = "ApiVersionsRequest" if raw["type"] == "request" else "ApiVersionsResponse"
    base: type = ApiMessage
    if spec_name == "ApiVersionsResponse":
        # kafka-python's own class carries the rule that this response's header is never flexible.
        from kafka.protocol.metadata.api_versions import ApiVersionsResponse

        base = ApiVersionsResponse
    # Creating a response class registers it in kafka-python's global api-key -> class table;
    # restore the table so kafka-python clients in the same process keep their own classes.
    registry = ResponseClassRegistry._response_class_registry
    saved = dict(registry)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            cls = type(ApiMessage)(carrier, (base,), {"json_patch": classmethod(json_patch)})
    finally:
        registry.clear()
        registry.update(saved)
    cls.__name__ = cls.__qualname__ = f"Engine{spec_name}"
    _ENGINE_CLASSES[spec_name] = cls
    return cls


def kafka_python_message(spec: MessageSpec, version: int) -> KpMessage:
    """The kafka-python class that encodes ``spec`` in ``version``.

    kafka-python's own class is used where its spec copy declares the version; otherwise its engine
    runs our official spec (see :func:`kafka_python_engine_class`).
    """
    assert spec.api_key is not None
    own = kafka_python_classes().get((spec.api_key, spec.type))
    if own is not None:
        own_valid = parse_versions(own._json["validVersions"])
        assert own_valid is not None
        if in_range(own_valid, version):
            return KpMessage(own, "kafka-python", own_valid)
    return KpMessage(kafka_python_engine_class(spec.name), "official-spec", spec.valid)


def _kp_fields(kp_field: Any) -> tuple[Any, ...]:
    """kafka-python's child fields of a struct or struct-array field (in spec order)."""
    inner = getattr(kp_field, "array_of", None)
    if inner is not None and kp_field.is_struct_array():
        return tuple(inner._fields)
    return tuple(kp_field._fields)


def _bitfield_from_int(value: int) -> set[int] | None:
    unsigned = value & 0xFFFFFFFF
    bits = {bit for bit in range(32) if unsigned >> bit & 1}
    # kafka-python reads the "not requested" sentinel (INT32_MIN, bit 31 alone) as None.
    return None if bits == {31} else bits


def _bitfield_to_int(bits: set[int] | None) -> int:
    if bits is None:
        return -(2**31)
    unsigned = sum(1 << bit for bit in bits)
    return unsigned - 2**32 if unsigned >= 2**31 else unsigned


def _kp_is_bitfield(kp_field: Any) -> bool:
    return getattr(kp_field, "_type_str", None) == "bitfield"


# kafka-python's json_patch hooks rename these fields (and make them bit sets).
_KP_RENAMED = {
    "ClusterAuthorizedOperations": "authorized_operations",
    "TopicAuthorizedOperations": "authorized_operations",
    # Kafka 4 renamed TxnOffsetCommit's GenerationId (KIP-1251); kafka-python keeps the old name.
    "GenerationIdOrMemberEpoch": "GenerationId",
}
_FIELD_PAIRS: dict[tuple[int, int], list[tuple[SpecField, Any | None]]] = {}


def field_pairs(kp_struct: Any, spec_fields: list[SpecField]) -> list[tuple[SpecField, Any | None]]:
    """Pair each official spec field with kafka-python's field of the same name.

    kafka-python's spec copy can be newer (extra fields for newer versions) or older (lacking
    fields of versions it does not declare: paired with None, and never used in those versions),
    so fields are matched by spec name, not by position.
    """
    key = (id(kp_struct), id(spec_fields))
    pairs = _FIELD_PAIRS.get(key)
    if pairs is None:
        by_name = {kp_field._name: kp_field for kp_field in _kp_fields(kp_struct)}
        pairs = []
        for spec_field in spec_fields:
            kp_field = by_name.get(spec_field.name) or by_name.get(
                _KP_RENAMED.get(spec_field.name, "")
            )
            pairs.append((spec_field, kp_field))
        _FIELD_PAIRS[key] = pairs
    return pairs


def to_kafka_python(
    kp_struct: Any, spec_fields: list[SpecField], value: dict[str, Any], version: int
) -> dict[str, Any]:
    """Keyword arguments for a kafka-python data class, from a logical value."""
    kwargs: dict[str, Any] = {}
    for spec_field, kp_field in field_pairs(kp_struct, spec_fields):
        if spec_field.attr not in value:
            continue
        assert kp_field is not None, f"kafka-python lacks field {spec_field.name}"
        kwargs[kp_field.name] = _to_kp_value(kp_field, spec_field, value[spec_field.attr], version)
    return kwargs


def default_struct_value(fields: list[SpecField], version: int) -> dict[str, Any]:
    """The logical value of a struct whose fields all hold their spec defaults."""
    value: dict[str, Any] = {}
    for spec_field in fields:
        if not spec_field.present(version):
            continue
        if spec_field.is_struct and not spec_field.is_array:
            assert spec_field.fields is not None
            value[spec_field.attr] = (
                None
                if spec_field.raw_default == "null"
                else default_struct_value(spec_field.fields, version)
            )
        else:
            value[spec_field.attr] = spec_field.default
    return value


def _is_tagged_struct(spec_field: SpecField, version: int) -> bool:
    return spec_field.is_struct and not spec_field.is_array and spec_field.is_tagged(version)


def _to_kp_value(kp_field: Any, spec_field: SpecField, item: Any, version: int) -> Any:
    if item is None:
        return None
    if spec_field.is_struct:
        assert spec_field.fields is not None
        if _is_tagged_struct(spec_field, version) and item == default_struct_value(
            spec_field.fields, version
        ):
            # kafka-python's "absent" tagged struct is None; it would write a default instance,
            # whereas the Kafka rule (and ours) omits a tagged field that holds its default.
            return None
        data_class = kp_field.data_class
        if spec_field.is_array:
            return [
                data_class(
                    version=version, **to_kafka_python(kp_field, spec_field.fields, v, version)
                )
                for v in item
            ]
        return data_class(
            version=version, **to_kafka_python(kp_field, spec_field.fields, item, version)
        )
    if _kp_is_bitfield(kp_field):
        return _bitfield_from_int(item)
    return item


def from_kafka_python(
    kp_struct: Any, spec_fields: list[SpecField], obj: Any, version: int
) -> dict[str, Any]:
    """The logical value of a decoded kafka-python object (only fields present in ``version``)."""
    value: dict[str, Any] = {}
    for spec_field, kp_field in field_pairs(kp_struct, spec_fields):
        if not spec_field.present(version):
            continue
        assert kp_field is not None, f"kafka-python lacks field {spec_field.name}"
        value[spec_field.attr] = _from_kp_value(
            kp_field, spec_field, getattr(obj, kp_field.name), version
        )
    return value


def _from_kp_value(kp_field: Any, spec_field: SpecField, item: Any, version: int) -> Any:
    if spec_field.is_struct:
        assert spec_field.fields is not None
        if item is None:
            if _is_tagged_struct(spec_field, version):
                return default_struct_value(spec_field.fields, version)
            return None
        if spec_field.is_array:
            return [from_kafka_python(kp_field, spec_field.fields, v, version) for v in item]
        return from_kafka_python(kp_field, spec_field.fields, item, version)
    if _kp_is_bitfield(kp_field):
        return _bitfield_to_int(item)
    if spec_field.is_array:
        if item is None:
            return None
        return [_normalise_scalar(spec_field.element_type, v) for v in item]
    return _normalise_scalar(spec_field.type, item)


def _normalise_scalar(type_name: str, item: Any) -> Any:
    if item is None:
        # kafka-python reads the all-zero UUID as None.
        return ZERO_UUID if type_name == "uuid" else None
    if type_name in ("bytes", "records"):
        return bytes(item)
    return item


def kp_build(kp: KpMessage, spec: MessageSpec, value: dict[str, Any], version: int) -> Any:
    """A kafka-python message object holding ``value``."""
    return kp.cls(version=version, **to_kafka_python(kp.cls._struct, spec.fields, value, version))


def kp_encode(obj: Any, version: int) -> bytes:
    """Body bytes from kafka-python's generic encoder.

    The generic ``ApiMessage.encode`` is called directly to bypass per-class conveniences that
    rewrite values (MetadataRequest v0 null topics, DeleteTopicsRequest topic names).
    """
    from kafka.protocol.api_message import ApiMessage

    return bytes(ApiMessage.encode(obj, version=version))


def kp_decode(kp: KpMessage, data: bytes, version: int) -> Any:
    """Decode body bytes with kafka-python's generic decoder.

    ``ApiMessage.decode`` is used directly: ``ApiVersionsResponse.decode`` would switch to v0
    whenever the error code is non-zero, which is a connection-level policy, not the codec.
    """
    from kafka.protocol.api_message import ApiMessage

    decode = ApiMessage.decode.__func__
    return decode(kp.cls, data, version=version)


def kp_value(kp: KpMessage, spec: MessageSpec, obj: Any, version: int) -> dict[str, Any]:
    """Logical value of a decoded kafka-python message."""
    return from_kafka_python(kp.cls._struct, spec.fields, obj, version)


def kp_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, flexible: bool
) -> bytes:
    """A request header (v1, or v2 when ``flexible``) encoded by kafka-python."""
    from kafka.protocol.api_header import RequestHeader

    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    return bytes(header.encode(flexible=flexible))


def kp_decode_request_header(data: bytes, flexible: bool) -> tuple[int, int, int, str | None]:
    """Decode a request header with kafka-python; return its four fields."""
    from kafka.protocol.api_header import RequestHeader

    stream = io.BytesIO(data)
    header = RequestHeader.decode(stream, flexible=flexible)
    assert stream.tell() == len(data), "kafka-python left header bytes unread"
    return (
        header.request_api_key,
        header.request_api_version,
        header.correlation_id,
        header.client_id,
    )


def kp_response_header(correlation_id: int, flexible: bool) -> bytes:
    """A response header (v0, or v1 when ``flexible``) encoded by kafka-python."""
    from kafka.protocol.api_header import ResponseHeader

    return bytes(ResponseHeader(correlation_id=correlation_id).encode(flexible=flexible))


def kp_frame(obj: Any, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """A complete frame (size, header, body) as kafka-python would write it for ``obj``."""
    assert obj.API_VERSION == version
    if obj.is_request():
        obj.with_header(correlation_id=correlation_id, client_id=client_id)
    else:
        obj.with_header(correlation_id=correlation_id)
    # version=None: kafka-python's version setter would poke a request field into a response
    # header; the object already carries its version.
    return bytes(obj.encode(version=None, header=True, framed=True))
