"""Producers and transactions: active producers per partition, list and describe transactions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import by_topic, error_or_none, item_results, unless_negative
from aiokafkawire.protocol.messages import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from aiokafkawire.protocol.messages import describe_producers as m_describe_producers
from aiokafkawire.structs import TopicPartition

# ListTransactions filters by duration from v1 and by a transactional id pattern from v2.
_DURATION_FILTER_VERSION = 1
_ID_PATTERN_VERSION = 2


@dataclass(frozen=True)
class ProducerState:
    """One active producer of a partition, as its leader reports it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int | None  # None: no open transaction


@dataclass(frozen=True)
class ProducerStates:
    """The active producers of one partition, or the error describing them."""

    partition: TopicPartition
    active_producers: tuple[ProducerState, ...] = ()
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class TransactionListing:
    """A transaction as ListTransactions reports it."""

    transactional_id: str
    producer_id: int
    state: str
    coordinator: int


@dataclass(frozen=True)
class TransactionDescription:
    """A transaction's state as its coordinator reports it, or the error describing it."""

    transactional_id: str
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    transaction_timeout_ms: int = -1
    transaction_start_time_ms: int | None = None  # None: no transaction in progress
    partitions: tuple[TopicPartition, ...] = ()
    coordinator: int | None = None
    error: errors.KafkaError | None = None


def _producer_states(tp: TopicPartition, partition: Any) -> ProducerStates:
    """A DescribeProducers answer's partition as :class:`ProducerStates`."""
    return ProducerStates(
        tp,
        tuple(
            ProducerState(
                s.producer_id,
                s.producer_epoch,
                s.last_sequence,
                s.last_timestamp,
                s.coordinator_epoch,
                unless_negative(s.current_txn_start_offset),
            )
            for s in partition.active_producers
        ),
        error_or_none(partition.error_code, partition.error_message),
    )


def _description(
    state: Any, coordinator: int, error: errors.KafkaError | None
) -> TransactionDescription:
    """A DescribeTransactions answer's state as a :class:`TransactionDescription`."""
    return TransactionDescription(
        state.transactional_id,
        state.transaction_state,
        state.producer_id,
        state.producer_epoch,
        state.transaction_timeout_ms,
        unless_negative(state.transaction_start_time_ms),
        tuple(TopicPartition(t.topic, p) for t in state.topics for p in t.partitions),
        coordinator,
        error,
    )


class TransactionCalls(AdminCore):
    """Admin calls about idempotent producers and transactions."""

    async def describe_producers(
        self, partitions: Iterable[TopicPartition], *, raise_on_error: bool = True
    ) -> dict[TopicPartition, ProducerStates]:
        """The active idempotent/transactional producers of each partition (asks its leader)."""
        self._check()
        leaders, failed = await self._by_leader(partitions)
        results = {tp: ProducerStates(tp, (), exc) for tp, exc in failed.items()}

        async def ask(node: int, tps: list[TopicPartition]) -> None:
            request = DescribeProducersRequest(
                topics=[
                    m_describe_producers.TopicRequest(name=t, partition_indexes=ps)
                    for t, ps in by_topic((tp.topic, tp.partition) for tp in tps).items()
                ]
            )
            response = await self._cluster.send(node, request)
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    results[tp] = _producer_states(tp, p)

        await asyncio.gather(*(ask(node, tps) for node, tps in leaders.items()))
        return item_results("describe_producers", results, raise_on_error)

    async def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        min_duration_ms: int | None = None,
        transactional_id_pattern: str | None = None,
    ) -> list[TransactionListing]:
        """Transactions known to any broker's coordinator, optionally filtered.

        ``states`` are Kafka's state names (``Ongoing``, ``CompleteCommit``, ...);
        ``min_duration_ms`` (ListTransactions v1+) keeps transactions running at least that long;
        ``transactional_id_pattern`` (v2+) is a Java regular expression the broker applies.
        """
        self._check()
        state_filters = list(states)
        producer_filters = list(producer_ids)

        async def ask(node_id: int) -> list[TransactionListing]:
            connection = await self._cluster.connection(node_id)
            version = connection.versions.version_for(ListTransactionsRequest.API_KEY)
            request = ListTransactionsRequest(
                state_filters=state_filters, producer_id_filters=producer_filters
            )
            if min_duration_ms is not None:
                if version < _DURATION_FILTER_VERSION:
                    raise errors.UnsupportedVersionForBrokerError(
                        "a duration filter needs ListTransactions v1+"
                    )
                request.duration_filter = min_duration_ms
            if transactional_id_pattern is not None:
                if version < _ID_PATTERN_VERSION:
                    raise errors.UnsupportedVersionForBrokerError(
                        "a transactional id pattern needs ListTransactions v2+"
                    )
                request.transactional_id_pattern = transactional_id_pattern
            response = await connection.send(request, version)
            errors.raise_for_code(response.error_code, f"ListTransactions on broker {node_id}")
            return [
                TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, node_id)
                for t in response.transaction_states
            ]

        answers = await self._ask_each_broker(ask)
        listings = [listing for answer in answers.values() for listing in answer]
        return sorted(listings, key=lambda t: t.transactional_id)

    async def describe_transactions(
        self, transactional_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, TransactionDescription]:
        """State, producer, timeout and partitions of transactions (asks each coordinator)."""
        self._check()
        results: dict[str, TransactionDescription] = {}
        for tid in dict.fromkeys(transactional_ids):
            try:
                coordinator = await self._cluster.coordinator(tid, "transaction")
                response = await self._cluster.send_to_coordinator(
                    tid,
                    DescribeTransactionsRequest(transactional_ids=[tid]),
                    kind="transaction",
                    purpose="default",
                )
            except errors.BrokerResponseError as exc:
                results[tid] = TransactionDescription(tid, error=exc)
                continue
            for state in response.transaction_states:
                error = error_or_none(state.error_code)
                if errors.action_for(state.error_code) is errors.ErrorAction.FIND_COORDINATOR:
                    self._cluster.invalidate_coordinator(tid, "transaction")  # ask afresh next time
                results[state.transactional_id] = _description(state, coordinator.node_id, error)
        return item_results("describe_transactions", results, raise_on_error)
