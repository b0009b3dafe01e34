"""One description per client option: the source of ``docs/configuration.md``.

``tools/gen_docs.py`` takes each option's type and default from the code (the signatures, and
``CommonConfig``'s fields) and its description from here, in Markdown.  It fails when an option
has no description, a description names no option, or two options share a text, so the page
neither falls behind the code nor repeats one option's text for another.  The class docstrings
keep their own option bullets for the API reference.
"""

from __future__ import annotations

#: The options every client takes (``aiokafkawire.client_config.CommonConfig``).
COMMON = {
    "bootstrap_servers": (
        '`"host:port,host:port"` or a list of `"host:port"`; brokers to fetch the first '
        "metadata from (`[v6]:port` for IPv6; listener prefixes such as `SSL://` are accepted, "
        "other URL schemes are refused)."
    ),
    "client_id": "the name brokers log and use for quotas.",
    "request_timeout_ms": "how long a request may wait for its response.",
    "connect_timeout_ms": "how long opening a connection (TCP, TLS, ApiVersions) may take.",
    "metadata_max_age_ms": "refresh the cluster metadata at least this often.",
    "retry_backoff_ms": (
        "the first wait before a retry (requests, metadata, coordinator lookups), doubling with"
        " jitter up to `retry_backoff_max_ms`."
    ),
    "reconnect_backoff_ms": (
        "the first wait before reconnecting to a broker after a failed connection; it doubles "
        "(with jitter) after each further failure."
    ),
    "reconnect_backoff_max_ms": (
        "the longest wait between reconnection attempts to one broker (where "
        "`reconnect_backoff_ms` stops doubling)."
    ),
    "max_in_flight_requests_per_connection": "requests pipelined on one connection.",
    "api_version": (
        'cap the protocol versions: `"0.10"`, `"2.8"`, ... (a release) or a mapping `{api_key: '
        "max_version}`; `None` negotiates through ApiVersions."
    ),
    "security_protocol": '`"PLAINTEXT"`, `"SSL"`, `"SASL_PLAINTEXT"` or `"SASL_SSL"`.',
    "ssl_context": (
        "an `SSLContext` (default for SSL: the system's trust store; see `create_ssl_context`)."
    ),
    "sasl_mechanism": (
        '`"PLAIN"`, `"SCRAM-SHA-256"`, `"SCRAM-SHA-512"` or `"OAUTHBEARER"` (with a `SASL_*` '
        "`security_protocol`)."
    ),
    "sasl_plain_username": "the user name for PLAIN and SCRAM.",
    "sasl_plain_password": (
        "the password for PLAIN and SCRAM; never logged, and hidden from every repr."
    ),
    "sasl_oauth_token_provider": (
        "for OAUTHBEARER: a callable (or an object with `token()`), plain or async, returning "
        "the bearer token; called at each (re-)authentication."
    ),
    "allow_auto_create_topics": (
        "let Metadata requests create missing topics (where the broker allows it)."
    ),
    "metadata_wait_ms": (
        "how long to wait for an unknown topic's metadata before `UnknownTopicError`."
    ),
    "metadata_recovery_strategy": (
        '`"rebootstrap"` (the default, as the Java client since 4.0): when no known broker'
        " answers, a broker answers REBOOTSTRAP_REQUIRED, or metadata has failed for"
        " `metadata_recovery_rebootstrap_trigger_ms`, start over from `bootstrap_servers`"
        ' (KIP-899, KIP-1102); `"none"`: the bootstrap addresses serve the first metadata only.'
    ),
    "metadata_recovery_rebootstrap_trigger_ms": (
        "how long metadata refreshes may keep failing before the client rebootstraps."
    ),
    "enable_metrics_push": (
        "push this client's metrics to the cluster when a broker-side client-metrics"
        " subscription asks for them (KIP-714, as Java's `enable.metrics.push`; producers and"
        " consumers). `False` never asks; see the Observability page."
    ),
    "retry_backoff_max_ms": (
        "the longest wait between retries (where `retry_backoff_ms` stops doubling); also paces"
        " looking again for a subscribed topic that does not exist yet."
    ),
    "hooks": (
        "an object (or list of objects) with `on_connect`, `on_disconnect`, `on_request`, "
        "`on_batch` or `on_rebalance` methods; see `metrics`."
    ),
}
#: ``Producer(**options)``.
PRODUCER = {
    "acks": '0 (do not wait), 1 (leader), `"all"`/-1 (all in-sync replicas; default).',
    "compression": '`None`, `"gzip"`, `"snappy"`, `"lz4"` or `"zstd"`: how batches are compressed.',
    "compression_type": (
        "the same option as `compression` under its Java/aiokafka name (give one or the other)."
    ),
    "linger_ms": "how long a batch may wait for more records.",
    "batch_size": (
        "uncompressed bytes per partition batch. A batch takes `buffer_memory` as it fills (16 "
        "KiB first, then doubling), so a large limit costs nothing for partitions that see few "
        "records; keep it below the topics' `max.message.bytes`."
    ),
    "max_request_size": "limit of a Produce request and of one record.",
    "buffer_memory": "bytes of undelivered batches before `send` blocks.",
    "max_block_ms": (
        "how long one `send` may block in all (its metadata and buffer waits share it) before "
        "`BufferFullError` / `UnknownTopicError`; also bounds `partitions_for`'s metadata wait "
        "and how long a transactional producer's `start` waits for its coordinator and "
        "producer id."
    ),
    "delivery_timeout_ms": "give up on a record this long after `send`.",
    "enable_idempotence": (
        "producer id + sequence numbers, so retries never duplicate or reorder records. "
        'Explicitly `True` requires `acks="all"`.'
    ),
    "transactional_id": (
        "enables transactions (implies idempotence); unique per producer instance: a second "
        "producer with the same id fences the first."
    ),
    "transaction_timeout_ms": (
        "how long the transaction coordinator lets a transaction stay open before aborting it "
        "(at most the broker's `transaction.max.timeout.ms`)."
    ),
    "partitioner": "a name, class, instance or function (see `create_partitioner`).",
    "key_serializer": (
        "a callable turning each record key into `bytes` or `None` (it is called for "
        "`None` keys too): `f(obj)`, or `f(obj, ctx)` (a `SerializationContext`: topic, "
        "field, headers it may add to), possibly async (a registry serializer): see "
        "[the serializer interface](schemas.md#the-serializer-interface)."
    ),
    "value_serializer": (
        "a callable turning each record value into `bytes` or `None` (it is called for "
        "`None` values too): `f(obj)`, or `f(obj, ctx)` (a `SerializationContext`: topic, "
        "field, headers it may add to), possibly async (a registry serializer): see "
        "[the serializer interface](schemas.md#the-serializer-interface)."
    ),
}
#: ``Consumer(*topics, **options)``.
CONSUMER = {
    "group_id": 'the consumer group (`None`: no group, no commits; `""` is refused).',
    "group_instance_id": (
        "a static member id (KIP-345): a restart within the session timeout keeps the "
        "assignment without a rebalance."
    ),
    "group_protocol": '`"classic"` (default) or `"consumer"` (KIP-848, broker-side assignment).',
    "group_remote_assignor": 'the broker-side assignor for `"consumer"` groups.',
    "partition_assignment_strategy": (
        "assignor names or objects, in order of preference (default range and "
        "cooperative-sticky, as the Java client)."
    ),
    "session_timeout_ms": "the coordinator drops a member it has not heard from this long.",
    "heartbeat_interval_ms": "how often the member heartbeats (below the session timeout).",
    "max_poll_interval_ms": (
        "a member that does not poll for this long leaves the group (and rejoins at its next poll)."
    ),
    "rebalance_timeout_ms": (
        "how long the coordinator waits for members to rejoin (default: `max_poll_interval_ms`)."
    ),
    "auto_offset_reset": (
        'where to start without a committed offset: `"earliest"`, `"latest"` or `"none"` (raise'
        " `NoOffsetForPartitionError` / `OffsetOutOfRangeClientError`)."
    ),
    "enable_auto_commit": (
        "commit the positions every `auto_commit_interval_ms`, on revocation and on close."
    ),
    "auto_commit_interval_ms": "the period of automatic commits.",
    "isolation_level": (
        '`"read_uncommitted"` or `"read_committed"` (records of aborted transactions are '
        "dropped, open transactions hold reading back at the last stable offset)."
    ),
    "fetch_min_bytes": (
        "the broker answers a fetch once it has this many bytes (or after `fetch_max_wait_ms`)."
    ),
    "fetch_max_wait_ms": (
        "the longest the broker holds a fetch waiting for `fetch_min_bytes` of records."
    ),
    "fetch_max_bytes": "the most bytes a fetch response may carry.",
    "max_partition_fetch_bytes": "the most bytes per partition in a fetch response.",
    "max_poll_records": "the most records one `getmany` (or iteration step) hands out.",
    "check_crcs": "verify the CRC of every record batch.",
    "client_rack": "the consumer's rack, to fetch from a replica in it (KIP-392).",
    "fetch_sessions": "incremental fetch sessions (KIP-227): brokers send only what changed.",
    "pattern_refresh_interval_ms": (
        "with a pattern subscription, how often the topic list is fetched again, so that new "
        "matching topics are joined within this time (subscribed topics that do not exist yet "
        "are looked for with backoff up to `retry_backoff_max_ms`)."
    ),
    "key_deserializer": (
        "`bytes | None -> Any` applied to every record key, or `f(data, ctx)` (a "
        "`SerializationContext`), possibly async (a registry deserializer): see "
        "[the serializer interface](schemas.md#the-serializer-interface)."
    ),
    "value_deserializer": (
        "`bytes | None -> Any` applied to every record value, or `f(data, ctx)` (a "
        "`SerializationContext`), possibly async (a registry deserializer): see "
        "[the serializer interface](schemas.md#the-serializer-interface)."
    ),
}
#: ``ShareConsumer(*topics, group_id=..., **options)``.
SHARE_CONSUMER = {
    "group_id": "the share group.",
    "acknowledgement_mode": (
        '`"implicit"` (default: a poll accepts the records the previous poll handed out) or '
        '`"explicit"` (`acknowledge` every record).'
    ),
    "on_acknowledgement": (
        "called with each `AcknowledgementOutcome` (the broker's verdict on the "
        "acknowledgements of one partition in one request, or a client-side failure such as "
        "`AcquisitionLockTimeoutError`); a plain function or a coroutine function."
    ),
    "fetch_max_wait_ms": "how long a ShareFetch waits on the broker for records.",
    "fetch_min_bytes": "how much data a ShareFetch waits for.",
    "fetch_max_bytes": "the most data one ShareFetch answer carries.",
    "max_poll_records": (
        "the most records one poll hands out; also the ShareFetch `MaxRecords` (and `BatchSize`)."
    ),
    "acquire_mode": (
        '`"batch_optimized"` (default: the broker may acquire more than `max_poll_records` to '
        'keep whole record batches together) or `"record_limit"` (at most `max_poll_records` '
        "per fetch: finer sharing between members, more requests)."
    ),
    "check_crcs": "verify the CRC of fetched record batches.",
    "client_rack": "the rack id sent with the heartbeat (rack-aware assignment).",
    "on_deserialization_error": (
        '`"release"` (default, as the Java client: a record a deserializer fails on is '
        'delivered again until the group\'s delivery count limit) or `"reject"` (archived at '
        "once; dead-letter it from the `RecordDeserializationError`)."
    ),
    "key_deserializer": (
        "`bytes | None -> Any` applied to record keys, or `f(data, ctx)` (a "
        "`SerializationContext`), possibly async (a registry deserializer): see "
        "[the serializer interface](schemas.md#the-serializer-interface)."
    ),
    "value_deserializer": (
        "`bytes | None -> Any` applied to record values, or `f(data, ctx)` (a "
        "`SerializationContext`), possibly async (a registry deserializer): see "
        "[the serializer interface](schemas.md#the-serializer-interface)."
    ),
}
