"""JSON over HTTP with the key, the retry rules below and a typed error for every failure.

When a failed call may be sent again without asking the caller (the TypeScript SDK's rules):

- ``idempotent``: GET requests, estimate (it starts and spends nothing) and start run (it always
  carries an Idempotency-Key, so a repeat returns the run already started). Retried on a
  connection failure or timeout, 408, 429, 500, 502, 503 and 504.
- ``refused_only``: everything else (upload-url, complete, cancel). Retried only when the service
  certainly did nothing: a 429 (the rate limiter answers before the request is handled) or a
  refused connection (nothing was sent). A 500, 503 or a connection cut mid-request may come after
  the change was made, so those reach the caller.

The delay before retry n (0-based) is the answer's Retry-After when it has one (a Retry-After
longer than ``max_retry_after`` is not waited out: the error reaches the caller at once), else
exponential backoff with jitter: half to all of ``backoff_base * 2**n``, at most 8 s.
"""

import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .errors import APIConnectionError, APITimeoutError, ToolrunError, error_from_response

IDEMPOTENT = "idempotent"
REFUSED_ONLY = "refused_only"

RETRY_STATUSES = frozenset([408, 429, 500, 502, 503, 504])
MAX_BACKOFF = 8.0

_MISSING = object()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answers like any other: signed storage URLs and the API do not redirect, and
    a redirect must never carry the Authorization header elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[override]
        return None


_opener = urllib.request.build_opener(_NoRedirect)


class RawResponse:
    """A whole answer: status, headers (case-insensitive ``get``) and body bytes."""

    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


def _no_answer(err: BaseException, url: str, timeout: float) -> APIConnectionError:
    host = urllib.parse.urlsplit(url).netloc
    reason = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return APITimeoutError("No answer from %s within %g s" % (host, timeout), status=0, code="timeout")
    out = APIConnectionError("Could not reach %s: %s" % (host, reason), status=0, code="connection_error")
    out.refused = isinstance(reason, ConnectionRefusedError)  # type: ignore[attr-defined]
    return out


class OpenAnswer:
    """An answer whose body is still to be read: ``status``, ``headers``, ``read(n)``, ``close()``;
    a context manager."""

    def __init__(self, status: int, headers: Any, fp: Any) -> None:
        self.status = status
        self.headers = headers
        self._fp = fp

    def read(self, n: int = -1) -> bytes:
        return self._fp.read(n) if n >= 0 else self._fp.read()

    def readline(self) -> bytes:
        return self._fp.readline()

    def close(self) -> None:
        self._fp.close()

    def __enter__(self) -> "OpenAnswer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_url(method: str, url: str, data: Optional[bytes], headers: Mapping[str, str], timeout: float) -> OpenAnswer:
    """Sends a request; returns the open answer, 2xx or not. No answer raises
    APIConnectionError (APITimeoutError after ``timeout`` seconds)."""
    req = urllib.request.Request(url, data=data, method=method)
    for name, value in headers.items():
        req.add_header(name, value)
    try:
        resp = _opener.open(req, timeout=timeout)
    except urllib.error.HTTPError as err:
        # An error status is an answer like any other.
        return OpenAnswer(err.code, err.headers, err)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise _no_answer(err, url, timeout) from err
    return OpenAnswer(resp.getcode(), resp.headers, resp)


def fetch(method: str, url: str, data: Optional[bytes], headers: Mapping[str, str], timeout: float) -> RawResponse:
    """open_url plus the whole body; a body cut off is a connection error."""
    resp = open_url(method, url, data, headers, timeout)
    try:
        with resp:
            body = resp.read()
    except (OSError, http.client.HTTPException) as err:
        host = urllib.parse.urlsplit(url).netloc
        if isinstance(err, (socket.timeout, TimeoutError)):
            raise APITimeoutError("The answer from %s stopped for %g s" % (host, timeout), status=0, code="timeout") from err
        raise APIConnectionError("The answer from %s was cut off: %s" % (host, err), status=0, code="connection_error") from err
    return RawResponse(resp.status, resp.headers, body)


def is_retryable(policy: str, err: ToolrunError) -> bool:
    """Whether err may be retried under policy (see the module's docstring)."""
    if policy == IDEMPOTENT:
        return isinstance(err, APIConnectionError) or err.status in RETRY_STATUSES
    return err.status == 429 or bool(getattr(err, "refused", False))


def retry_delay(err: ToolrunError, retry_index: int, backoff_base: float, max_retry_after: float) -> Optional[float]:
    """Seconds to wait before retry ``retry_index`` (0 for the first); None: do not retry (the
    Retry-After asked for is longer than max_retry_after)."""
    if err.retry_after is not None:
        if err.retry_after > max_retry_after:
            return None
        return float(err.retry_after)
    ceiling = min(MAX_BACKOFF, backoff_base * (2 ** retry_index))
    return ceiling / 2 + random.random() * ceiling / 2


class RetryInfo:
    """What on_retry is told before each automatic retry."""

    def __init__(self, method: str, path: str, attempt: int, delay: float, error: ToolrunError) -> None:
        self.method = method
        self.path = path
        self.attempt = attempt  # 1 for the first retry
        self.delay = delay
        self.error = error

    def __repr__(self) -> str:
        return "RetryInfo(%s %s, attempt=%d, delay=%.3f, error=%r)" % (self.method, self.path, self.attempt, self.delay, self.error)


class Transport:
    def __init__(
        self,
        api_key: str,
        base_url: str,
        timeout: float,
        max_retries: int,
        max_retry_after: float,
        backoff_base: float,
        user_agent: str,
        on_retry: Optional[Callable[[RetryInfo], None]] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_key = api_key
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self.backoff_base = backoff_base
        self.user_agent = user_agent
        self.on_retry = on_retry
        self.sleep = sleep

    def url(self, path: str) -> str:
        return self.base_url + path

    def delay_for(self, err: ToolrunError, retry_index: int) -> Optional[float]:
        return retry_delay(err, retry_index, self.backoff_base, self.max_retry_after)

    def request(
        self,
        method: str,
        path: str,
        body: Any = _MISSING,
        headers: Optional[Dict[str, str]] = None,
        retry: str = IDEMPOTENT,
        timeout: Optional[float] = None,
    ) -> Tuple[Any, Any]:
        """Sends the request, retrying as ``retry`` allows; returns (parsed JSON body, headers)."""
        retry_index = 0
        while True:
            try:
                return self._once(method, path, body, headers or {}, timeout if timeout is not None else self.timeout)
            except ToolrunError as err:
                if retry_index >= self.max_retries or not is_retryable(retry, err):
                    raise
                delay = self.delay_for(err, retry_index)
                if delay is None:
                    raise
                retry_index += 1
                if self.on_retry is not None:
                    self.on_retry(RetryInfo(method, path, retry_index, delay, err))
                self.sleep(delay)

    def _once(self, method: str, path: str, body: Any, extra: Dict[str, str], timeout: float) -> Tuple[Any, Any]:
        headers = {
            "Authorization": "Bearer " + self.api_key,
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        headers.update(extra)
        data = None
        if body is not _MISSING:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        res = fetch(method, self.url(path), data, headers, timeout)
        if not 200 <= res.status < 300:
            raise error_from_response(res.status, res.headers, res.body)
        if not res.body:
            return None, res.headers
        try:
            return json.loads(res.body.decode("utf-8")), res.headers
        except ValueError:
            raise ToolrunError(
                "%s %s answered %d with a body that is not JSON" % (method, path, res.status),
                status=res.status,
                code="invalid_response",
                request_id=res.headers.get("x-request-id"),
                body=res.body.decode("utf-8", "replace"),
            ) from None
