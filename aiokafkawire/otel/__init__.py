"""OpenTelemetry tracing and metrics for every aiokafkawire client (extra ``otel``).

:func:`instrument` wraps the clients' public methods; before it is called nothing of
OpenTelemetry is imported and the clients run their own code unchanged (so tracing off costs
nothing), and :func:`uninstrument` restores them.  Spans follow the OpenTelemetry messaging
semantic conventions:

- ``send <topic>`` (PRODUCER) per record, from ``send`` until the broker acknowledged it
  (partition and offset recorded), the W3C trace context injected into the record's headers;
  ``send_batch`` makes one span for the batch.
- ``process <topic>`` (CONSUMER) per record handed out by ``async for`` / ``getone``: its parent
  is the producer's context from the headers, and it is the *current* span while the loop body
  runs (until the next record is asked for), so spans the body opens are its children.
- ``receive <topic>`` (CONSUMER) per ``getmany`` batch, linked to each record's producer context.

The share consumer is traced the same way.  Metrics: records and bytes sent, records consumed,
retries, failed records, buffer use and consumer lag, as observable instruments that read each
live client's counters (which never reset).
"""

from __future__ import annotations

import contextvars
import functools
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["instrument", "is_instrumented", "uninstrument"]

_originals: dict[tuple[type, str], tuple[Any, bool]] = {}
_open_process: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()
_live_clients: weakref.WeakSet[Any] = weakref.WeakSet()
_in_batch: contextvars.ContextVar[bool] = contextvars.ContextVar("aiokafkawire_otel_batch")
_meter_state: dict[str, Any] = {}


def is_instrumented() -> bool:
    """Whether :func:`instrument` is in effect."""
    return bool(_originals)


def instrument(tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Trace (and meter) every Producer, Consumer and ShareConsumer from now on.

    ``tracer_provider`` / ``meter_provider`` default to OpenTelemetry's global providers.
    Calling it again does nothing until :func:`uninstrument`.
    """
    if _originals:
        return
    from opentelemetry import metrics, trace

    from aiokafkawire import __version__
    from aiokafkawire.consumer import Consumer
    from aiokafkawire.consumer.share import ShareConsumer
    from aiokafkawire.producer import Producer

    tracer = trace.get_tracer("aiokafkawire", __version__, tracer_provider=tracer_provider)
    _wrap(Producer, "send", lambda f: _traced_send(f, tracer))
    _wrap(Producer, "send_batch", lambda f: _traced_send_batch(f, tracer))
    for consumer_class in (Consumer, ShareConsumer):
        _wrap(consumer_class, "__anext__", lambda f: _traced_next(f, tracer))
        _wrap(consumer_class, "getmany", lambda f: _traced_getmany(f, tracer))
        _wrap(consumer_class, "close", _closing)
        _wrap(consumer_class, "start", _registering)
    _wrap(Consumer, "getone", lambda f: _traced_next(f, tracer))
    _wrap(Producer, "start", _registering)
    meter = metrics.get_meter("aiokafkawire", __version__, meter_provider=meter_provider)
    _register_instruments(meter)


def uninstrument() -> None:
    """Restore the clients' own methods (spans still open are ended)."""
    for (cls, name), (original, own) in _originals.items():
        if own:
            setattr(cls, name, original)
        else:
            delattr(cls, name)  # it was inherited: let the base class's show again
    _originals.clear()
    for span, token in list(_open_process.values()):
        _finish(span, token)
    _open_process.clear()
    _meter_state.clear()


def _wrap(cls: type, name: str, make: Any) -> None:
    original = getattr(cls, name)
    _originals[(cls, name)] = (original, name in cls.__dict__)
    wrapper = make(original)
    functools.update_wrapper(wrapper, original)
    setattr(cls, name, wrapper)


# ---------------------------------------------------------------------------- attributes


def _client_id(client: Any) -> str | None:
    config = getattr(client, "config", None) or getattr(client, "_common", None)
    return getattr(config, "client_id", None)


def _base_attributes(client: Any, topic: str, operation: str, kind: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": "kafka",
        "messaging.destination.name": topic,
        "messaging.operation.name": operation,
        "messaging.operation.type": kind,
    }
    client_id = _client_id(client)
    if client_id:
        attributes["messaging.client.id"] = client_id
    group = getattr(client, "_group_id", None)
    if group:
        attributes["messaging.consumer.group.name"] = group
    return attributes


def _key_text(key: Any) -> str | None:
    if isinstance(key, str):
        return key
    if isinstance(key, (bytes, bytearray)):
        try:
            return bytes(key).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


_carriers: dict[str, Any] = {}


def _header_access() -> tuple[Any, Any]:
    """The (setter, getter) that put trace context in record headers and read it back."""
    if not _carriers:
        from opentelemetry.propagators.textmap import Getter, Setter

        class HeaderSetter(Setter[list[tuple[str, bytes | None]]]):
            def set(self, carrier: list[tuple[str, bytes | None]], key: str, value: str) -> None:
                carrier[:] = [h for h in carrier if h[0] != key]
                carrier.append((key, value.encode()))

        class HeaderGetter(Getter[Iterable[tuple[str, bytes | None]]]):
            def get(
                self, carrier: Iterable[tuple[str, bytes | None]], key: str
            ) -> list[str] | None:
                found = [v.decode(errors="replace") for k, v in carrier if k == key and v]
                return found or None

            def keys(self, carrier: Iterable[tuple[str, bytes | None]]) -> list[str]:
                return [k for k, _ in carrier]

        _carriers["set"], _carriers["get"] = HeaderSetter(), HeaderGetter()
    return _carriers["set"], _carriers["get"]


def _headers_list(headers: Any) -> list[tuple[str, bytes | None]]:
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


# ---------------------------------------------------------------------------- producer


def _traced_send(original: Any, tracer: Any) -> Any:
    from opentelemetry import propagate, trace

    async def send(self: Any, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> Any:
        headers = _headers_list(kwargs.get("headers"))
        if _in_batch.get(False):  # the batch's span is current: carry its context only
            propagate.inject(headers, setter=_header_access()[0])
            kwargs["headers"] = headers
            return await original(self, topic, value, key, **kwargs)
        attributes = _base_attributes(self, topic, "send", "send")
        key_text = _key_text(key)
        if key_text is not None:
            attributes["messaging.kafka.message.key"] = key_text
        if kwargs.get("partition") is not None:
            attributes["messaging.destination.partition.id"] = str(kwargs["partition"])
        span = tracer.start_span(
            f"send {topic}", kind=trace.SpanKind.PRODUCER, attributes=attributes
        )
        propagate.inject(
            headers, setter=_header_access()[0], context=trace.set_span_in_context(span)
        )
        kwargs["headers"] = headers
        try:
            handle = await original(self, topic, value, key, **kwargs)
        except BaseException as exc:
            _fail(span, exc)
            raise
        handle.add_done_callback(lambda done: _delivered(span, done))
        return handle

    return send


def _delivered(span: Any, handle: Any) -> None:
    error = handle.exception()
    if error is not None:
        _fail(span, error)
        return
    metadata = handle.result()
    span.set_attribute("messaging.destination.partition.id", str(metadata.partition))
    if metadata.offset >= 0:
        span.set_attribute("messaging.kafka.offset", metadata.offset)
    span.end()


def _fail(span: Any, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(error)
    span.set_attribute("error.type", type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, str(error)))
    span.end()


def _traced_send_batch(original: Any, tracer: Any) -> Any:
    from opentelemetry import trace

    async def send_batch(self: Any, batch: Any, topic: str, *, partition: int) -> Any:
        attributes = _base_attributes(self, topic, "send", "send")
        attributes["messaging.destination.partition.id"] = str(partition)
        attributes["messaging.batch.message_count"] = batch.record_count()
        with tracer.start_as_current_span(
            f"send {topic}", kind=trace.SpanKind.PRODUCER, attributes=attributes, end_on_exit=False
        ) as span:
            marker = _in_batch.set(True)
            try:
                future = await original(self, batch, topic, partition=partition)
            except BaseException as exc:
                _fail(span, exc)
                raise
            finally:
                _in_batch.reset(marker)
        future.add_done_callback(
            lambda done: _fail(span, done.exception()) if done.exception() else span.end()
        )
        return future

    return send_batch


# ---------------------------------------------------------------------------- consumers


def _producer_context(record: Any) -> Any:
    from opentelemetry import propagate

    return propagate.extract(list(record.headers or ()), getter=_header_access()[1])


def _finish(span: Any, token: Any) -> None:
    from opentelemetry import context

    try:
        context.detach(token)
    except ValueError:
        pass  # the loop moved to another task: the span still ends
    span.end()


def _end_process(consumer: Any) -> None:
    open_span = _open_process.pop(consumer, None)
    if open_span is not None:
        _finish(*open_span)


def _traced_next(original: Any, tracer: Any) -> Any:
    from opentelemetry import context, trace

    async def next_record(self: Any, *args: Any) -> Any:
        _end_process(self)
        record = await original(self, *args)
        attributes = _base_attributes(self, record.topic, "process", "process")
        attributes["messaging.destination.partition.id"] = str(record.partition)
        attributes["messaging.kafka.offset"] = record.offset
        key_text = _key_text(getattr(record, "key", None))
        if key_text is not None:
            attributes["messaging.kafka.message.key"] = key_text
        span = tracer.start_span(
            f"process {record.topic}",
            context=_producer_context(record),
            kind=trace.SpanKind.CONSUMER,
            attributes=attributes,
        )
        _open_process[self] = (span, context.attach(trace.set_span_in_context(span)))
        return record

    return next_record


def _traced_getmany(original: Any, tracer: Any) -> Any:
    from opentelemetry import trace

    async def getmany(self: Any, *args: Any, **kwargs: Any) -> Any:
        _end_process(self)
        batches = await original(self, *args, **kwargs)
        for tp, records in batches.items():
            links = []
            for record in records:
                producer = trace.get_current_span(_producer_context(record)).get_span_context()
                if producer.is_valid:
                    links.append(trace.Link(producer))
            attributes = _base_attributes(self, tp.topic, "receive", "receive")
            attributes["messaging.destination.partition.id"] = str(tp.partition)
            attributes["messaging.batch.message_count"] = len(records)
            tracer.start_span(
                f"receive {tp.topic}", kind=trace.SpanKind.CONSUMER, attributes=attributes,
                links=links,
            ).end()  # fmt: skip
        return batches

    return getmany


def _closing(original: Any) -> Any:
    async def close(self: Any, *args: Any, **kwargs: Any) -> Any:
        _end_process(self)
        return await original(self, *args, **kwargs)

    return close


def _registering(original: Any) -> Any:
    async def start(self: Any) -> Any:
        result = await original(self)
        _live_clients.add(self)
        return result

    return start


# ---------------------------------------------------------------------------- metrics


def _counters(section: str, key: str) -> Any:
    from opentelemetry.metrics import Observation

    def observe(_options: Any) -> list[Any]:
        found = []
        for client in list(_live_clients):
            try:
                snapshot = client.metrics().get(section)
            except (RuntimeError, AttributeError):  # a client mid-change: next collection
                continue
            if snapshot and key in snapshot:
                attributes = {"messaging.system": "kafka"}
                client_id = _client_id(client)
                if client_id:
                    attributes["messaging.client.id"] = client_id
                found.append(Observation(snapshot[key], attributes))
        return found

    return observe


def _broker_observations(key: str, api_stat: str | None = None) -> Any:
    """Per-broker observations of ``metrics()["brokers"][...][key]`` (with ``api_stat``, of
    ``[key][api][api_stat]``: one observation per API, e.g. the p99 request latency)."""
    from opentelemetry.metrics import Observation

    def observe(_options: Any) -> list[Any]:
        found = []
        for client in list(_live_clients):
            try:
                brokers = client.metrics().get("brokers") or {}
            except (RuntimeError, AttributeError):  # a client mid-change: next collection
                continue
            client_id = _client_id(client)
            for stats in brokers.values():
                base = {"messaging.system": "kafka", "server.address": stats["address"]}
                if client_id:
                    base["messaging.client.id"] = client_id
                if api_stat is None:
                    found.append(Observation(stats[key], base))
                    continue
                for api, summary in stats[key].items():
                    if api_stat in summary:
                        found.append(Observation(summary[api_stat], {**base, "kafka.api": api}))
        return found

    return observe


def _register_instruments(meter: Any) -> None:
    counters = {
        "messaging.client.sent.messages": ("producer", "records_sent", "{message}"),
        "aiokafkawire.producer.bytes_sent": ("producer", "bytes_sent", "By"),
        "aiokafkawire.producer.retries": ("producer", "retries", "{retry}"),
        "aiokafkawire.producer.records_failed": ("producer", "records_failed", "{message}"),
        "messaging.client.consumed.messages": ("consumer", "records_consumed", "{message}"),
    }
    for name, (section, key, unit) in counters.items():
        meter.create_observable_counter(name, callbacks=[_counters(section, key)], unit=unit)
    meter.create_observable_gauge(
        "aiokafkawire.producer.buffer_use", callbacks=[_counters("producer", "buffer_use")]
    )
    meter.create_observable_gauge(
        "aiokafkawire.consumer.lag", callbacks=[_counters("consumer", "lag_total")],
        unit="{message}",
    )  # fmt: skip
    # Per broker (``server.address``): what metrics()["brokers"] counts, never reset.
    for key, unit in (
        ("bytes_sent", "By"),
        ("bytes_received", "By"),
        ("requests", "{request}"),
        ("request_errors", "{error}"),
    ):
        meter.create_observable_counter(
            f"aiokafkawire.broker.{key}", callbacks=[_broker_observations(key)], unit=unit
        )
    for stat in ("p50_ms", "p99_ms"):
        meter.create_observable_gauge(
            f"aiokafkawire.broker.request_latency.{stat[:3]}",
            callbacks=[_broker_observations("latency", stat)],
            unit="ms",
        )
    _meter_state["meter"] = meter
