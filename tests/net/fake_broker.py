"""A scriptable in-process Kafka broker for connection-layer unit tests.

It decodes real request frames with the project's framing helpers and answers with whatever the
test's handler returns, so the tests exercise the client's actual bytes on a real socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafkawire.protocol import SUPPORTED_VERSIONS
from aiokafkawire.protocol.framing import FrameSplitter, decode_request, encode_response
from aiokafkawire.protocol.messages import ApiVersionsResponse
from aiokafkawire.protocol.messages.api_versions import ApiVersion

CLOSE = object()  # a handler returns this to drop the connection
SILENT = object()  # ... or this to never answer

Handler = Callable[[Any, Any], Awaitable[Any]]


def api_versions_response(overrides: dict[int, tuple[int, int]] | None = None) -> Any:
    """An ApiVersions answer advertising everything the client supports (with overrides)."""
    ranges = dict(SUPPORTED_VERSIONS)
    ranges.update(overrides or {})
    return ApiVersionsResponse(
        error_code=0,
        api_keys=[
            ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(ranges.items())
        ],
    )


class FakeBroker:
    """Serves on 127.0.0.1; ``handler(header, request)`` decides each answer."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        versions: dict[int, tuple[int, int]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.handler = handler
        self.versions = versions
        self.ssl_context = ssl_context
        self.requests: list[tuple[Any, Any]] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self._arrived: asyncio.Condition | None = None

    async def __aenter__(self) -> FakeBroker:
        self._arrived = asyncio.Condition()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop listening and drop every client connection."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def wait_for_requests(self, count: int, timeout: float = 2.0) -> None:
        """Wait until ``count`` requests have arrived in total."""
        assert self._arrived is not None
        async with self._arrived:
            await asyncio.wait_for(
                self._arrived.wait_for(lambda: len(self.requests) >= count), timeout
            )

    def drop_clients(self) -> None:
        """Abort every client connection (a broker crash, as the client sees it)."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        splitter = FrameSplitter()
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                for body in splitter.feed(chunk):
                    header, request = decode_request(body)
                    self.requests.append((header, request))
                    assert self._arrived is not None
                    async with self._arrived:
                        self._arrived.notify_all()
                    if header.api_key == 18 and (
                        self.handler is None or not getattr(self, "custom_api_versions", False)
                    ):
                        answer: Any = api_versions_response(self.versions)
                    else:
                        assert self.handler is not None, f"unexpected request {request!r}"
                        answer = await self.handler(header, request)
                    if answer is CLOSE:
                        writer.transport.abort()
                        return
                    if answer is SILENT or answer is None:
                        continue
                    writer.write(
                        encode_response(
                            header.correlation_id, header.api_key, header.api_version, answer
                        )
                    )
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()


class ThreadedFakeBroker:
    """A :class:`FakeBroker` on its own thread and event loop.

    It answers while the test's own loop is blocked (``time.sleep``), which is what a test of
    reads outside the loop's turn needs.  ``handler`` runs on the broker's loop.  Use as a
    context manager; leaving it stops the broker and joins the thread.
    """

    def __init__(self, handler: Handler, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self.broker = FakeBroker(handler, ssl_context=ssl_context)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.broker.port

    def __enter__(self) -> ThreadedFakeBroker:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.broker.__aenter__(), self._loop).result(5)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.broker.close(), self._loop).result(5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()

    def drop_clients(self) -> None:
        """Abort every client connection, from the broker's thread; returns once done."""
        done = threading.Event()

        def drop() -> None:
            self.broker.drop_clients()
            done.set()

        self._loop.call_soon_threadsafe(drop)
        done.wait(5)
