"""Runs (start, get, list, wait, cancel) and their outputs (signed URLs, downloads)."""

import http.client
import os
import re
import time
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union
from urllib.parse import quote, urlencode

from ._http import IDEMPOTENT, REFUSED_ONLY, Transport, open_url
from ._mime import extension_for
from .errors import APIConnectionError, ConflictError, RateLimitError, RunFailedError, WaitTimeoutError, error_from_response
from .models import OutputUrl, Run, RunList, RunOutput
from .streams import RunEvent, run_events

__all__ = ["Runs", "Outputs", "RunRef"]

#: A run or its id.
RunRef = Union[str, Run]

MAX_POLL = 5.0
MAX_PREFER_WAIT = 60


def _id(run: Any) -> str:
    if isinstance(run, Run):
        return run.id
    if isinstance(run, dict) and isinstance(run.get("id"), str):
        return run["id"]
    if isinstance(run, str):
        return run
    raise TypeError("expected a run or a run id, not %s" % type(run).__name__)


def _q(value: str) -> str:
    return quote(value, safe="")


class Runs:
    """``client.runs``."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def start(
        self,
        tool_id: str,
        inputs: Optional[Dict[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        *,
        duration_seconds: Optional[float] = None,
        cancel_after: Optional[Union[str, int]] = None,
    ) -> Run:
        """Starts a run (202, status queued): its price is held from the team's Sparks.

        ``inputs`` maps slot names to values; media slots take a list of file ids (use
        ``client.run()`` to upload local files first). ``idempotency_key`` (at most 255
        characters) is a random UUID when omitted, so the client's own retries never start a
        second run; pass your own to make retries across processes safe too. ``cancel_after``
        (seconds, or ``"10m"``, ``"1h30m"``; at most 24h) asks the service to cancel the run if it
        is not final that long after its start.
        """
        body: Dict[str, Any] = {}
        if inputs is not None:
            body["inputs"] = inputs
        if duration_seconds is not None:
            body["duration_seconds"] = duration_seconds
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        if cancel_after is not None:
            headers["Cancel-After"] = str(cancel_after)
        data, _ = self._http.request("POST", "/v1/tools/%s/runs" % _q(tool_id), body=body, headers=headers, retry=IDEMPOTENT)
        return Run.from_dict(data)

    def get(self, run: RunRef, wait: Optional[int] = None) -> Run:
        """The run as it is now. With ``wait`` (1 to 60 seconds) the service holds the answer until
        the run is final or that many seconds pass (``Prefer: wait``); kept 5 s under the client's
        timeout."""
        return self._get(run, wait)[0]

    def _get(self, run: RunRef, wait: Optional[int]) -> Tuple[Run, bool]:
        headers = {}
        seconds = 0
        if wait is not None:
            seconds = min(MAX_PREFER_WAIT, int(self._http.timeout) - 5, int(wait))
            if seconds >= 1:
                headers["Prefer"] = "wait=%d" % seconds
        data, answer_headers = self._http.request("GET", "/v1/runs/%s" % _q(_id(run)), headers=headers, retry=IDEMPOTENT)
        applied = bool(headers) and answer_headers.get("preference-applied") is not None
        return Run.from_dict(data), applied

    def list(
        self,
        limit: Optional[int] = None,
        starting_after: Optional[str] = None,
        status: Optional[str] = None,
        tool_id: Optional[str] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
    ) -> RunList:
        """One page of the team's API runs, newest first (``limit`` 1 to 100, default 20); pass
        the last run's id as ``starting_after`` while ``has_more``. Timestamps are ISO 8601."""
        query = {
            k: v
            for k, v in (
                ("limit", limit),
                ("starting_after", starting_after),
                ("status", status),
                ("tool_id", tool_id),
                ("created_after", created_after),
                ("created_before", created_before),
            )
            if v is not None
        }
        path = "/v1/runs" + ("?" + urlencode(query) if query else "")
        data, _ = self._http.request("GET", path, retry=IDEMPOTENT)
        return RunList.from_dict(data)

    def iter(self, **filters: Any) -> Iterator[Run]:
        """Every run matching the filters of ``list()``, newest first, page after page as read."""
        after = filters.pop("starting_after", None)
        while True:
            page = self.list(starting_after=after, **filters)
            for run in page.data:
                yield run
            if not page.has_more or not page.data:
                return
            after = page.data[-1].id

    def events(
        self,
        run: RunRef,
        last_event_id: Optional[str] = None,
        on_open: Optional[Callable[[], None]] = None,
    ) -> Iterator[RunEvent]:
        """The run's changes as they happen (``GET /v1/runs/{id}/events``, server-sent events, no
        polling): ``status`` first, ``progress`` as it moves, and ``done`` with the final run,
        after which the loop ends. A dropped connection is made again with Last-Event-ID, so
        nothing is seen twice; ``last_event_id`` resumes after an event seen earlier."""
        return run_events(self._http, _q(_id(run)), last_event_id, on_open)

    def cancel(self, run: RunRef) -> Run:
        """Cancels a queued or running run; its hold is released. A final run answers
        ConflictError ``run_not_cancelable`` (a canceled one is returned as it is)."""
        data, _ = self._http.request("POST", "/v1/runs/%s/cancel" % _q(_id(run)), retry=REFUSED_ONLY)
        return Run.from_dict(data)

    def wait(
        self,
        run: RunRef,
        timeout: Optional[float] = None,
        poll: float = 2.0,
        *,
        prefer_wait: int = MAX_PREFER_WAIT,
        on_progress: Optional[Callable[[Run], None]] = None,
    ) -> Run:
        """Returns the run once it is succeeded, failed or canceled (a failed run is returned too:
        look at ``status`` and ``error``).

        Each request asks the service to hold its answer until the run is final, for up to
        ``prefer_wait`` seconds (``Prefer: wait``, at most 60 and 5 s under the client's timeout),
        so a waiting script sends about one request a minute. When the service answers at once
        anyway (its bound of waiting requests is reached), the client polls every ``poll``
        seconds, growing towards 5 s (the spec's 2 to 5 s guidance). A 429 is waited out using
        Retry-After. ``on_progress`` gets the run after every answer (lower ``prefer_wait`` to
        hear of progress more often). ``timeout`` (seconds) raises WaitTimeoutError; the run goes
        on.
        """
        run_id = _id(run)
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = max(0.0, poll)
        current: Optional[Run] = run if isinstance(run, Run) else None
        if current is not None:
            if on_progress is not None:
                on_progress(current)
            if current.is_final:
                return current
        sleep = self._http.sleep
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeoutError(
                    "Run %s was not final after %g s" % (run_id, timeout), run=current, status=0, code="wait_timeout"
                )
            hold = prefer_wait if remaining is None else min(prefer_wait, int(remaining))
            asked = time.monotonic()
            try:
                current, applied = self._get(run_id, hold if hold >= 1 else None)
            except RateLimitError as err:
                # Retries inside the request give up on a long Retry-After; waiting it out is the polite answer.
                delay = max(interval, err.retry_after if err.retry_after is not None else 1.0)
                sleep(delay if remaining is None else max(0.0, min(delay, remaining)))
                continue
            if on_progress is not None:
                on_progress(current)
            if current.is_final:
                return current
            if applied and time.monotonic() - asked >= 1.0:
                continue  # the service held the request: ask again at once
            remaining = None if deadline is None else deadline - time.monotonic()
            sleep(interval if remaining is None else max(0.0, min(interval, remaining)))
            if interval >= 2.0:
                interval = min(MAX_POLL, interval * 1.15)


_UNSAFE = re.compile(r'[\x00-\x1f/\\:*?"<>|]')


def output_file_name(output: RunOutput, taken: set) -> str:
    """A safe file name for an output: the base name it suggests, or the asset id plus an extension;
    ``-2``, ``-3``, ... when taken."""
    suggested = _UNSAFE.sub("_", os.path.basename(output.file_name or ""))
    name = suggested if suggested not in ("", ".", "..") else output.asset_id + extension_for(output.mime_type)
    stem, ext = os.path.splitext(name)
    n = 2
    while name in taken:
        name = "%s-%d%s" % (stem, n, ext)
        n += 1
    taken.add(name)
    return name


class Outputs:
    """``client.outputs``: signed URLs and downloads of a succeeded run's outputs."""

    def __init__(self, http: Transport, runs: Runs) -> None:
        self._http = http
        self._runs = runs

    def url(self, run: RunRef, asset_id: str) -> OutputUrl:
        """A short-lived signed URL for one output (fetch it straight away). Just after a run
        succeeds an output may still be being checked: ConflictError ``output_not_ready``."""
        data, _ = self._http.request("GET", "/v1/runs/%s/outputs/%s/url" % (_q(_id(run)), _q(asset_id)), retry=IDEMPOTENT)
        return OutputUrl.from_dict(data)

    def download(
        self,
        run: RunRef,
        dest_dir: Union[str, "os.PathLike[str]"],
        *,
        ready_timeout: float = 120.0,
        timeout: float = 3600.0,
    ) -> List[str]:
        """Downloads every output of a succeeded run into ``dest_dir`` (made if needed), each
        through a fresh signed URL, and returns the paths written, in the order of
        ``run.outputs``. Files are named as the outputs suggest (``photo-upscaled.png``).

        ``output_not_ready`` is asked again until ``ready_timeout`` seconds; a URL refused by
        storage (expired) is replaced by a new one. A run that is not succeeded raises
        RunFailedError. ``timeout`` bounds each output's download.
        """
        resolved = run if isinstance(run, Run) else self._runs.get(run)
        if resolved.status != "succeeded":
            raise RunFailedError(
                "Run %s is %s; only a succeeded run has outputs to download" % (resolved.id, resolved.status),
                run=resolved,
                code="run_not_succeeded",
                details={"run_id": resolved.id, "status": resolved.status, "error": resolved.error},
            )
        directory = os.fspath(dest_dir)
        os.makedirs(directory, exist_ok=True)
        taken: set = set()
        paths = []
        for output in resolved.outputs:
            target = os.path.join(directory, output_file_name(output, taken))
            self._download_one(resolved.id, output.asset_id, target, ready_timeout, timeout)
            paths.append(target)
        return paths

    def _download_one(self, run_id: str, asset_id: str, target: str, ready_timeout: float, timeout: float) -> None:
        ready_deadline = time.monotonic() + ready_timeout
        not_ready_waits = 0
        refused_urls = 0
        while True:
            try:
                signed = self.url(run_id, asset_id)
            except ConflictError as err:
                if err.code == "output_not_ready" and time.monotonic() < ready_deadline:
                    backoff = min(2.0, 0.25 * 2 ** not_ready_waits)
                    not_ready_waits += 1
                    self._http.sleep(err.retry_after if err.retry_after is not None else backoff)
                    continue
                raise
            # The signed URL carries its own authorization: the API key is not sent to storage.
            resp = open_url("GET", signed.url, None, {"User-Agent": self._http.user_agent}, timeout)
            if not 200 <= resp.status < 300:
                with resp:
                    error = error_from_response(resp.status, resp.headers, resp.read())
                # An expired or refused URL: ask for a fresh one (a few times).
                if (resp.status in (403, 404) or resp.status >= 500) and refused_urls < 3:
                    refused_urls += 1
                    continue
                raise error
            partial = "%s.%s.part" % (target, uuid.uuid4().hex[:8])
            try:
                with resp, open(partial, "wb") as out:
                    while True:
                        try:
                            chunk = resp.read(1 << 20)
                        except (OSError, http.client.HTTPException) as err:
                            raise APIConnectionError(
                                "The download of output %s was cut off: %s" % (asset_id, err), status=0, code="connection_error"
                            ) from err
                        if not chunk:
                            break
                        out.write(chunk)
                os.replace(partial, target)
            except BaseException:
                try:
                    os.remove(partial)
                except OSError:
                    pass
                raise
            return
