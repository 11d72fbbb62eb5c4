"""Server-sent event streams: a run's changes (``runs.events``) and the team's events
(``events.stream``), read with the standard library and made again with Last-Event-ID when the
connection drops, the way EventSource (and the TypeScript SDK) does."""

import http.client
import json
import socket
from typing import Any, Callable, Dict, Iterator, Optional

from ._http import IDEMPOTENT, Transport, is_retryable, open_url
from .errors import APIConnectionError, ToolrunError, error_from_response
from .models import Run

__all__ = ["Events", "RunEvent", "StreamedEvent", "SseMessage", "parse_sse"]

#: Silence this long (not even the 15 s heartbeat) means a dead connection: it is made again.
IDLE_TIMEOUT = 45.0
#: How many recent event ids are remembered to drop repeats (delivery is at least once).
SEEN_IDS = 1000


class SseMessage:
    """One event of a stream: ``id`` (the last id seen so far), ``event`` (``message`` when the
    event names none) and ``data``."""

    __slots__ = ("id", "event", "data")

    def __init__(self, id: Optional[str], event: str, data: str) -> None:
        self.id = id
        self.event = event
        self.data = data

    def __repr__(self) -> str:
        return "SseMessage(id=%r, event=%r)" % (self.id, self.event)


def parse_sse(readline: Callable[[], bytes]) -> Iterator[SseMessage]:
    """The events of a text/event-stream body read line by line (the WHATWG rules): comments and
    ``retry:`` are skipped, an event is dispatched at its blank line, one without data is not."""
    last_id: Optional[str] = None
    event = ""
    data = []
    first = True
    while True:
        raw = readline()
        if not raw:
            return  # an event not ended by a blank line is dropped, as the standard says
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if first:
            line = line.lstrip("\ufeff")
            first = False
        if line == "":
            if data:
                yield SseMessage(last_id, event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value


class RunEvent:
    """One change of a run: ``event`` is ``status``, ``progress`` or (last) ``done``; ``run`` is the
    run as ``GET /v1/runs/{id}`` showed it then; ``id`` is what Last-Event-ID resumes after."""

    __slots__ = ("id", "event", "run")

    def __init__(self, id: str, event: str, run: Run) -> None:
        self.id = id
        self.event = event
        self.run = run

    def __repr__(self) -> str:
        return "RunEvent(id=%r, event=%r, status=%r)" % (self.id, self.event, self.run.status)


class StreamedEvent:
    """One event of the team: ``id`` and ``type`` as a webhook delivery of it carries them,
    ``body`` the very bytes (as text) such a delivery POSTs, ``event`` that body parsed."""

    __slots__ = ("id", "type", "body", "event")

    def __init__(self, id: str, type: str, body: str, event: Dict[str, Any]) -> None:
        self.id = id
        self.type = type
        self.body = body
        self.event = event

    def __repr__(self) -> str:
        return "StreamedEvent(id=%r, type=%r)" % (self.id, self.type)


def read_stream(
    transport: Transport,
    path: str,
    last_event_id: Optional[str] = None,
    on_open: Optional[Callable[[], None]] = None,
    is_last: Callable[[SseMessage], bool] = lambda m: False,
    resume_refused: Optional[Callable[[ToolrunError], bool]] = None,
    idle_timeout: float = IDLE_TIMEOUT,
) -> Iterator[SseMessage]:
    """Reads a stream until the service ends it with 204, ``is_last`` says an event was the last,
    or the caller stops iterating; a dropped connection is made again with Last-Event-ID.
    Failures to open (no answer, 429, 5xx) are retried with the client's delays, up to
    ``max_retries + 2`` in a row; other errors are raised as ToolrunErrors."""
    last_id = last_event_id
    failures = 0
    while True:
        headers = {
            "Authorization": "Bearer " + transport.api_key,
            "Accept": "text/event-stream",
            "User-Agent": transport.user_agent,
        }
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        failure: Optional[ToolrunError] = None
        try:
            resp = open_url("GET", transport.url(path), None, headers, max(idle_timeout, transport.timeout))
        except APIConnectionError as err:
            resp, failure = None, err
        if resp is not None and resp.status == 204:
            resp.close()
            return
        if resp is not None and not 200 <= resp.status < 300:
            with resp:
                failure = error_from_response(resp.status, resp.headers, resp.read())
            if failure.status == 422 and last_id is not None and resume_refused is not None and resume_refused(failure):
                last_id = None
                continue
        if resp is not None and failure is None:
            failures = 0
            if on_open is not None:
                on_open()
            try:
                with resp:
                    for message in parse_sse(resp.readline):
                        if message.id is not None:
                            last_id = message.id
                        yield message
                        if is_last(message):
                            return
            except (OSError, socket.timeout, http.client.HTTPException):
                pass  # dropped or silent: made again below, like a stream that simply ended
            transport.sleep(0.25)
            continue
        assert failure is not None
        if failures >= transport.max_retries + 2 or not is_retryable(IDEMPOTENT, failure):
            raise failure
        delay = transport.delay_for(failure, failures)
        if delay is None:
            raise failure
        failures += 1
        transport.sleep(delay)


def run_events(transport: Transport, run_id: str, last_event_id: Optional[str], on_open: Optional[Callable[[], None]]) -> Iterator[RunEvent]:
    path = "/v1/runs/%s/events" % run_id
    for m in read_stream(transport, path, last_event_id, on_open, is_last=lambda m: m.event == "done"):
        if m.id is not None:
            yield RunEvent(m.id, m.event, Run.from_dict(json.loads(m.data)))


class Events:
    """``client.events``: the team's events as a stream (``GET /v1/events``)."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def stream(
        self,
        last_event_id: Optional[str] = None,
        on_open: Optional[Callable[[], None]] = None,
        resume_refused: Optional[Callable[[ToolrunError], bool]] = None,
    ) -> Iterator[StreamedEvent]:
        """The team's events (run.succeeded, run.failed, run.canceled, ...) from now on (or after
        ``last_event_id``, an event of the last 24 hours) as they happen, for as long as the loop
        reads: ``break`` to stop. Repeats are skipped. ``on_open`` is called each time the stream
        is open. A Last-Event-ID the service no longer knows carries on from now, unless
        ``resume_refused(err)`` returns False (then the error is raised). Needs the webhooks
        scope and an owner or admin behind the key."""
        seen: Dict[str, None] = {}
        refused = resume_refused if resume_refused is not None else (lambda err: True)
        for m in read_stream(self._http, "/v1/events", last_event_id, on_open, resume_refused=refused):
            if m.id is None or m.id in seen:
                continue
            seen[m.id] = None
            if len(seen) > SEEN_IDS:
                del seen[next(iter(seen))]
            try:
                event = json.loads(m.data)
            except ValueError:
                continue
            yield StreamedEvent(m.id, m.event, m.data, event)

