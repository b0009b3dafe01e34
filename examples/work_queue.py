"""A job-processing service on a Kafka share group: workers share one topic record by record.

Each job is acknowledged explicitly: ACCEPT when it is done, RELEASE when it failed for a reason
that may pass (the broker hands it out again, to any worker, with ``delivery_count`` + 1), REJECT
when it can never succeed or has been tried ``--max-attempts`` times (the broker archives it).
A worker that dies holding jobs loses them only for the group's lock duration: the broker hands
them to the other workers then.

    python examples/work_queue.py --bootstrap localhost:9092 --enqueue 100   # add demo jobs
    python examples/work_queue.py --bootstrap localhost:9092 --workers 3     # process them
    python examples/work_queue.py                                            # all on its own

Share groups need Apache Kafka 4.1 or newer (KIP-932): without ``--bootstrap`` an embedded
Apache Kafka broker is started (``aiokafkawire.testing.KafkaCluster``: Java 17+ and Maven; the
first start downloads the broker's jars), 50 demo jobs are enqueued and the workers run.
SIGTERM or Ctrl-C stops the workers cleanly: the acknowledgements made so far are sent, jobs in
hand go back to the group.  Runs can follow each other: an existing topic is used as it is.

Jobs are JSON objects ``{"id": ..., "fail": "never" | "once" | "always"}`` (the ``fail`` field
lets the demo show retries and rejections).  A new share group starts at the latest offset by
default; ``--from-beginning`` sets the group's ``share.auto.offset.reset`` to ``earliest`` first.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import Admin, NewTopic, Producer, ShareConsumer, ShareRecord, errors
from aiokafkawire.admin import ConfigResource, ResourceType

log = logging.getLogger("work_queue")


class TransientJobError(Exception):
    """The job failed but may succeed if tried again (a timeout, a busy dependency)."""


class PermanentJobError(Exception):
    """The job can never succeed (bad input): retrying is pointless."""


Handler = Callable[[dict[str, Any], int], Awaitable[None]]


@dataclass
class Tally:
    """What the workers did, for the log (and the tests)."""

    done: list[tuple[str, int]] = field(default_factory=list)  # (job id, delivery count)
    retried: list[tuple[str, int]] = field(default_factory=list)
    rejected: list[tuple[str, int]] = field(default_factory=list)


async def demo_handler(job: dict[str, Any], delivery_count: int) -> None:
    """Stands in for real work: fails as the job asks it to."""
    await asyncio.sleep(0.001)
    if job.get("fail") == "always":
        raise PermanentJobError(f"job {job['id']} is malformed")
    if job.get("fail") == "once" and delivery_count == 1:
        raise TransientJobError(f"job {job['id']}: dependency busy")


async def worker(
    name: str,
    consumer: ShareConsumer,
    handler: Handler,
    tally: Tally,
    max_attempts: int,
) -> None:
    """Process jobs until the consumer closes; every job is acknowledged one way or another."""
    async for record in consumer:
        verdict = await process(record, handler, max_attempts)
        consumer.acknowledge(record, verdict)
        job_id = _job_id(record)
        {"accept": tally.done, "release": tally.retried, "reject": tally.rejected}[verdict].append(
            (job_id, record.delivery_count)
        )
        log.info("%s: job %s -> %s (delivery %d)", name, job_id, verdict, record.delivery_count)


async def process(record: ShareRecord, handler: Handler, max_attempts: int) -> str:
    """Run one job; the acknowledgement its outcome calls for."""
    try:
        job = json.loads(record.value)
    except (TypeError, ValueError):
        return "reject"  # not a job at all
    try:
        await handler(job, record.delivery_count)
    except TransientJobError as exc:
        if record.delivery_count >= max_attempts:
            log.warning("job %s: giving up after %d attempts: %s", job.get("id"), max_attempts, exc)
            return "reject"
        return "release"  # the broker redelivers it (maybe to another worker)
    except PermanentJobError as exc:
        log.warning("job %s rejected: %s", job.get("id"), exc)
        return "reject"
    return "accept"


def _job_id(record: ShareRecord) -> str:
    try:
        return str(json.loads(record.value)["id"])
    except (TypeError, ValueError, KeyError):
        return f"offset {record.offset}"


def _log_failed_acknowledgements(outcome: Any) -> None:
    if outcome.error is not None:
        # For example AcquisitionLockTimeoutError: a job took longer than the lock, so another
        # worker may have run it too. Jobs should be idempotent, or the lock long enough.
        log.error("acknowledgements on %s failed: %s", outcome.partition, outcome.error)


async def run_service(
    bootstrap: str,
    topic: str,
    group: str,
    *,
    workers: int = 3,
    handler: Handler = demo_handler,
    max_attempts: int = 3,
    stop: asyncio.Event | None = None,
    tally: Tally | None = None,
) -> Tally:
    """Run ``workers`` share consumers (one task each) until ``stop`` is set (or forever)."""
    tally = Tally() if tally is None else tally
    consumers = [
        ShareConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=f"worker-{i}",
            acknowledgement_mode="explicit",
            on_acknowledgement=_log_failed_acknowledgements,
        )
        for i in range(workers)
    ]
    for consumer in consumers:
        await consumer.start()
    tasks = [
        asyncio.create_task(worker(f"worker-{i}", c, handler, tally, max_attempts))
        for i, c in enumerate(consumers)
    ]
    try:
        if stop is None:
            await asyncio.gather(*tasks)
        else:
            await stop.wait()
    finally:
        # Stop the workers first (a job interrupted here is not acknowledged), then close:
        # closing sends the acknowledgements made so far and hands back what a worker holds.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for consumer in consumers:
            await consumer.close()
    return tally


async def enqueue(bootstrap: str, topic: str, count: int) -> None:
    """Add ``count`` demo jobs: every 10th fails once, every 25th always."""
    async with Producer(bootstrap_servers=bootstrap) as producer:
        for i in range(count):
            fail = "always" if i % 25 == 24 else "once" if i % 10 == 9 else "never"
            await producer.send(topic, value=json.dumps({"id": i, "fail": fail}).encode())
        await producer.flush()


async def prepare(bootstrap: str, topic: str, group: str, from_beginning: bool) -> None:
    """Create the topic if needed and, on request, start the group at the earliest offset."""
    async with Admin(bootstrap_servers=bootstrap) as admin:
        # Per-topic results instead of an exception: a topic that exists (a second run) is fine.
        created = await admin.create_topics([NewTopic(topic, 2, 1)], raise_on_error=False)
        for result in created.values():
            if result.error is not None and not isinstance(
                result.error, errors.TopicAlreadyExistsError
            ):
                raise result.error
        if from_beginning:
            resource = ConfigResource(ResourceType.GROUP, group)
            altered = await admin.alter_configs({resource: {"share.auto.offset.reset": "earliest"}})
            error = altered[resource].error
            if error is not None:
                raise error


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The given bootstrap servers, or an embedded Apache Kafka broker's (share groups need
    Kafka 4.1+, which Tansu is not) for the duration."""
    if bootstrap:
        yield bootstrap
        return
    from aiokafkawire.testing import KafkaCluster

    log.info("starting an embedded Apache Kafka broker (the first start downloads its jars)")
    with KafkaCluster() as cluster:
        yield cluster.bootstrap_servers


async def main(args: argparse.Namespace, bootstrap: str, demo: bool) -> None:
    await prepare(bootstrap, args.topic, args.group, args.from_beginning or demo)
    if args.enqueue or demo:
        await enqueue(bootstrap, args.topic, args.enqueue or 50)
        print(f"enqueued {args.enqueue or 50} jobs on {args.topic}", flush=True)
        if not demo:
            return
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"{args.workers} workers on {args.topic} (group {args.group}); Ctrl-C stops", flush=True)
    tally = await run_service(
        bootstrap,
        args.topic,
        args.group,
        workers=args.workers,
        max_attempts=args.max_attempts,
        stop=stop,
    )
    print(
        f"stopped: {len(tally.done)} done, {len(tally.retried)} released for a retry, "
        f"{len(tally.rejected)} rejected",
        flush=True,
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bootstrap", help="bootstrap servers (default: an embedded Apache Kafka broker)"
    )
    parser.add_argument("--topic", default="jobs")
    parser.add_argument("--group", default="job-workers")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--max-attempts", type=int, default=3)
    parser.add_argument("--enqueue", type=int, metavar="N", help="add N demo jobs and exit")
    parser.add_argument("--from-beginning", action="store_true")
    args = parser.parse_args()
    # The log goes to stdout, as a service's log usually does (and the tests read it there).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    with kafka(args.bootstrap) as bootstrap:
        asyncio.run(main(args, bootstrap, demo=args.bootstrap is None))


if __name__ == "__main__":
    cli()
