"""The requests of a share session and their answers: ShareFetch (records in, acknowledgements
out), ShareAcknowledge, and what their errors mean for the session, the buffer and the waiting
commits.  :class:`~aiokafkawire.consumer.share.fetcher.ShareFetcher`'s per-leader loops decide
what is due; this sends it and handles the answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.share.acknowledgements import Acknowledgements
from aiokafkawire.consumer.share.buffer import ShareChunk, ShareRecordBuffer
from aiokafkawire.consumer.share.codec import (
    AckMap,
    acknowledge_outcomes,
    answered_partitions,
    build_share_acknowledge,
    build_share_fetch,
    delivered_records,
    error_from,
    has_renewals,
    renewed_offsets,
    unanswered_outcomes,
    without_renewals,
)
from aiokafkawire.consumer.share.membership import share_groups_unsupported
from aiokafkawire.consumer.share.records import AcknowledgementOutcome, AcknowledgeType
from aiokafkawire.consumer.share.session import SessionState, ShareSession
from aiokafkawire.protocol.messages import ShareAcknowledgeRequest
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire.consumer.share.config import ShareFetchConfig

log = logging.getLogger("aiokafkawire.consumer.share")

__all__ = ["CommitRequest", "SessionRequests"]

OutcomeHandler = Callable[[list[AcknowledgementOutcome]], None]
FatalHandler = Callable[[errors.KafkaError], None]

#: The first ShareAcknowledge version that carries RENEW acknowledgements (KIP-1222).
_RENEW_VERSION = 2


class CommitRequest:
    """Acknowledgements ``ShareFetcher.commit`` wants sent now, and who waits for them."""

    __slots__ = ("acks", "future")

    def __init__(self, acks: AckMap, future: asyncio.Future[list[AcknowledgementOutcome]]):
        self.acks = acks
        self.future = future


class SessionRequests:
    """Sends a share session's requests to its leader and applies their answers."""

    def __init__(
        self,
        cluster: Cluster,
        config: ShareFetchConfig,
        acknowledgements: Acknowledgements,
        buffer: ShareRecordBuffer,
        *,
        member_id: Callable[[], str],
        on_outcomes: OutcomeHandler,
        on_fatal: FatalHandler,
        on_metadata_stale: Callable[[], None],
    ) -> None:
        self._cluster = cluster
        self._config = config
        self._acks = acknowledgements
        self.buffer = buffer
        self._member_id = member_id
        self._on_outcomes = on_outcomes
        self._on_fatal = on_fatal
        self._on_metadata_stale = on_metadata_stale
        #: The broker's acquisition lock timeout, from the latest ShareFetch answer.
        self.acquisition_lock_timeout_ms: int | None = None

    def topic_id(self, topic: str) -> Any:
        """The id of ``topic`` in the metadata (None when unknown)."""
        info = self._cluster.metadata.topics.get(topic)
        return None if info is None else info.topic_id

    def fail(self, acks: AckMap, commits: list[CommitRequest], error: errors.KafkaError) -> None:
        outcomes = [AcknowledgementOutcome(tp, dict(a), error) for tp, a in acks.items()]
        self._report(outcomes, commits)

    def _report(self, outcomes: list[AcknowledgementOutcome], commits: list[CommitRequest]) -> None:
        """Hand outcomes to the consumer and to the commits waiting for them."""
        if outcomes:
            self._on_outcomes(outcomes)
        for request in commits:
            if not request.future.done():
                request.future.set_result([o for o in outcomes if o.partition in request.acks])

    def _session_lost(self, node: int, session: ShareSession, *, answered_error: bool) -> None:
        """The broker's session is gone (or its epoch unknown): start over, drop its records."""
        if answered_error:
            session.session_error()
        else:
            session.lost()
        # The broker released the records with the session (or will when their locks
        # expire): they are no longer this consumer's to hand out or acknowledge.
        self.buffer.drop_node(node, self._acks.forget_offset)

    async def _send(self, node: int, request: Any, extra_ms: int = 0) -> Any:
        connection = await self._cluster.connection(node, purpose="share-fetch")
        if not connection.versions.supports(request.API_KEY):
            raise share_groups_unsupported(
                f"broker {node} ({connection.host}:{connection.port})",
                f"it has no {type(request).__name__[:-7]} API",
            )
        return await connection.send(request, timeout_ms=self._config.request_timeout_ms + extra_ms)

    async def _request(
        self,
        node: int,
        session: ShareSession,
        request: Any,
        acks: AckMap,
        commits: list[CommitRequest],
        *,
        what: str,
        requeue_acks: bool,
        extra_ms: int = 0,
    ) -> Any:
        """Send one session request; the answer, or None when it failed as a whole (handled).

        If it is abandoned before an answer, ``acks`` are put back to ride on a later request
        when ``requeue_acks``, else they fail with the commits.
        """
        try:
            response = await self._send(node, request, extra_ms)
        except errors.KafkaError as exc:
            # No answer (a lost connection, a timeout, an unreadable answer) or refused before
            # sending: the broker's epoch is unknown, and so is the fate of the
            # acknowledgements: they fail with the typed error (the fetcher's loop asks the
            # error table whether to try again).
            self._session_lost(node, session, answered_error=False)
            self.fail(acks, commits, exc)
            raise
        except BaseException:
            # Cancelled (or a bug) before an answer: the broker's epoch is unknown.
            self._session_lost(node, session, answered_error=False)
            abandoned = errors.KafkaError(f"the {what} was abandoned")
            if requeue_acks:
                self._acks.put_back(acks)
                self.fail({}, commits, abandoned)
            else:
                self.fail(acks, commits, abandoned)
            raise
        code = response.error_code
        if code:
            self._top_level_error(node, session, code, response.error_message, acks, commits)
            return None
        session.answered()
        return response

    async def fetch(
        self,
        node: int,
        session: ShareSession,
        wanted: list[TopicPartition],
        acks: AckMap,
        commits: list[CommitRequest],
    ) -> None:
        to_add, to_forget = session.plan(wanted)
        request = build_share_fetch(
            self._config,
            member_id=self._member_id(),
            epoch=session.request_epoch,
            topic_id=self.topic_id,
            to_add=to_add,
            to_forget=to_forget,
            acks=acks,
        )
        response = await self._request(
            node,
            session,
            request,
            acks,
            commits,
            what="share fetch",
            requeue_acks=True,
            extra_ms=self._config.fetch_max_wait_ms,
        )
        if response is not None:
            self._take_fetched(node, response, acks, commits)

    def _take_fetched(
        self, node: int, response: Any, acks: AckMap, commits: list[CommitRequest]
    ) -> None:
        """Buffer a ShareFetch answer's records and report its acknowledgement verdicts."""
        lock_ms = response.acquisition_lock_timeout_ms
        self.acquisition_lock_timeout_ms = lock_ms
        names = self._topic_names()
        outcomes: list[AcknowledgementOutcome] = []
        answered: set[TopicPartition] = set()
        chunks: list[ShareChunk] = []
        for tp, part in answered_partitions(response, names):
            answered.add(tp)
            sent = acks.get(tp)
            if sent:
                error = error_from(part.acknowledge_error_code, part.acknowledge_error_message, tp)
                outcomes.append(AcknowledgementOutcome(tp, dict(sent), error))
            if part.error_code:
                self._partition_error(node, tp, part.error_code, part.error_message)
                continue
            if part.acquired_records:
                records = delivered_records(
                    self._acks, self._config, tp, part.records, part.acquired_records, lock_ms
                )
                if records:
                    chunks.append(ShareChunk(node, tp, records))
        outcomes.extend(unanswered_outcomes(acks, answered))
        self.buffer.add(node, chunks)
        self._report(outcomes, commits)

    def _topic_names(self) -> dict[Any, str]:
        return {
            info.topic_id: name
            for name, info in self._cluster.metadata.topics.items()
            if info.topic_id is not None
        }

    def _top_level_error(
        self,
        node: int,
        session: ShareSession,
        code: int,
        message: str | None,
        acks: AckMap,
        commits: list[CommitRequest],
    ) -> None:
        error = error_from(code, message, None)
        assert error is not None
        if code == errors.UnsupportedVersionError.code:
            error = share_groups_unsupported(f"broker {node}", message or "")
        self.fail(acks, commits, error)
        # Whatever the error, the broker's view of the session is uncertain: start over.
        self._session_lost(node, session, answered_error=True)
        action = errors.action_for(code)
        if action is errors.ErrorAction.FATAL:
            # Authorization, a version or request this broker refuses: trying again cannot help.
            self._on_fatal(error)
            return
        # SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, a leader that moved, ...
        log.info("share request to broker %s: %s; opening a new share session", node, error)
        if action is errors.ErrorAction.REFRESH_METADATA:
            self._cluster.request_update()
            self._on_metadata_stale()

    def _partition_error(
        self, node: int, tp: TopicPartition, code: int, message: str | None
    ) -> None:
        error = error_from(code, message, tp)
        assert error is not None
        action = errors.action_for(code)
        if action is errors.ErrorAction.REFRESH_METADATA:
            log.info("share fetch %s from broker %s: %s; refreshing metadata", tp, node, error)
            self._cluster.request_update()
            self._on_metadata_stale()
        elif action is errors.ErrorAction.FATAL:
            self._on_fatal(error)
        else:
            log.warning("share fetch %s from broker %s: %s; fetching it again", tp, node, error)

    async def acknowledge(
        self,
        node: int,
        session: ShareSession,
        acks: AckMap,
        commits: list[CommitRequest],
    ) -> None:
        """One ShareAcknowledge (the session's next epoch, or -1 when it is closing).

        RENEWs need ShareAcknowledge v2 (Kafka 4.2+): to an older broker they fail, as
        outcomes, without a request."""
        refused: list[AcknowledgementOutcome] = []
        if has_renewals(acks):
            try:
                acks, refused = await self._renewals_supported(node, acks)
            except errors.KafkaError as exc:
                # No request went out: the acknowledgements (and the commits waiting for
                # them) fail with the error rather than being lost with this attempt.
                self.fail(acks, commits, exc)
                raise
        if not acks and session.state is not SessionState.CLOSING:
            self._report(refused, commits)
            return
        request = build_share_acknowledge(
            self._config.group_id,
            member_id=self._member_id(),
            epoch=session.request_epoch,
            topic_id=self.topic_id,
            acks=acks,
        )
        try:
            response = await self._request(
                node, session, request, acks, commits, what="acknowledgement", requeue_acks=False
            )
        except BaseException:
            self._report(refused, [])
            raise
        if response is None:
            self._report(refused, [])
            return
        outcomes = acknowledge_outcomes(
            response, self._topic_names(), acks, self._cluster.request_update
        )
        self._apply_renewals(response.acquisition_lock_timeout_ms, outcomes)
        self._report(refused + outcomes, commits)

    async def _renewals_supported(
        self, node: int, acks: AckMap
    ) -> tuple[AckMap, list[AcknowledgementOutcome]]:
        """``acks`` as they can be sent to ``node``, and outcomes for the RENEWs it cannot take."""
        connection = await self._cluster.connection(node, purpose="share-fetch")
        if connection.versions.supports(ShareAcknowledgeRequest.API_KEY, _RENEW_VERSION):
            return acks, []
        refused: list[AcknowledgementOutcome] = []
        for tp, offsets in acks.items():
            renewals = renewed_offsets(offsets)
            if renewals:
                refused.append(
                    AcknowledgementOutcome(
                        tp,
                        dict.fromkeys(renewals, AcknowledgeType.RENEW),
                        errors.UnsupportedVersionForBrokerError(
                            f"{tp.topic}-{tp.partition}: broker {node} cannot renew acquisition "
                            "locks (KIP-1222 needs ShareAcknowledge v2, Apache Kafka 4.2+)"
                        ),
                    )
                )
        return without_renewals(acks), refused

    def _apply_renewals(self, lock_ms: int, outcomes: list[AcknowledgementOutcome]) -> None:
        """A ShareAcknowledge answer: the broker's lock duration, and the renewed locks."""
        if lock_ms > 0:  # v2+ answers say it; a v1 answer reads 0
            self.acquisition_lock_timeout_ms = lock_ms
        lock_ms = self.acquisition_lock_timeout_ms or 0
        for outcome in outcomes:
            if outcome.error is None:
                renewals = renewed_offsets(outcome.offsets)
                if renewals:
                    self._acks.renewed(outcome.partition, renewals, lock_ms)
