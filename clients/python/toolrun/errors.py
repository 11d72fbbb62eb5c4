"""Errors raised by the client.

Every failure is a :class:`ToolrunError` (so ``except toolrun.ToolrunError`` catches all of
them), with a subclass per kind of failure to branch on. The service adds error codes within v1
without notice: branch on the ``code`` values you know and treat the rest by class or ``status``.
"""

import email.utils
import json
import time
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "ToolrunError",
    "InvalidRequestError",
    "AuthenticationError",
    "InsufficientSparksError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "ServerError",
    "APIConnectionError",
    "APITimeoutError",
    "WaitTimeoutError",
    "RunFailedError",
    "WebhookVerificationError",
    "error_from_response",
    "parse_retry_after",
]


class ToolrunError(Exception):
    """A call to the API failed: an error answer, or no answer at all (``status`` 0).

    Attributes:
        status: the HTTP status; 0 when no answer arrived (connection failure, timeout) or the
            error was raised by the client itself.
        code: the machine-readable code of the error envelope (``invalid_api_key``,
            ``run_not_found``, ...), or one of the client's own (``connection_error``, ``timeout``,
            ``wait_timeout``, ``run_not_succeeded``, ``http_<status>`` for an answer that had no
            envelope).
        message: plain English, not to be parsed.
        request_id: the ``X-Request-Id`` of the failed request: quote it when asking for help.
        errors: on 422, one dict per bad field or input slot: ``loc`` (a list of str and int whose
            last entry names the field), ``message`` and ``code``. An empty list otherwise.
        details: extra context for some codes (``required_scope``, ``limit_per_minute``, ...).
        retry_after: seconds from the ``Retry-After`` header (429, 503), when there was one.
        body: the parsed answer body (unknown fields included), or its text when not JSON.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "error",
        request_id: Optional[str] = None,
        errors: Optional[List[Dict[str, Any]]] = None,
        details: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.errors: List[Dict[str, Any]] = list(errors or [])
        self.details: Dict[str, Any] = dict(details or {})
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        where = "HTTP %d" % self.status if self.status else "no answer"
        text = "%s (%s, %s)" % (self.message, self.code, where)
        if self.request_id:
            text += " [request %s]" % self.request_id
        return text

    def __repr__(self) -> str:
        return "%s(status=%r, code=%r, message=%r, request_id=%r)" % (
            type(self).__name__,
            self.status,
            self.code,
            self.message,
            self.request_id,
        )


class InvalidRequestError(ToolrunError):
    """422 ``invalid_request`` (``errors`` names each bad field) or ``idempotency_key_reused``;
    also the other answers about a malformed request: 400, 405, 413, 415, 431."""


class AuthenticationError(ToolrunError):
    """401 ``api_key_required`` or ``invalid_api_key``: no key, or one that is unknown, revoked,
    malformed or of the other environment."""


class InsufficientSparksError(ToolrunError):
    """402 ``insufficient_sparks``: the run's hold exceeds the Sparks available."""


class PermissionDeniedError(ToolrunError):
    """403 ``insufficient_scope`` (``details['required_scope']``), ``plan_upgrade_required``,
    ``consent_required`` or ``insufficient_role``."""


class NotFoundError(ToolrunError):
    """404 ``tool_not_found``, ``run_not_found``, ``output_not_found``, ``file_not_found``, ..."""


class ConflictError(ToolrunError):
    """409 ``output_not_ready`` (ask again shortly), ``run_not_cancelable``,
    ``tool_execution_pipeline``, ``webhook_endpoint_limit_reached``, ..."""


class RateLimitError(ToolrunError):
    """429 ``rate_limited``: over the key's rate or the team's hourly run ceiling; wait
    ``retry_after`` seconds."""


class ServerError(ToolrunError):
    """5xx: ``internal_error``, ``service_unavailable`` (503), or a proxy's error page."""


class APIConnectionError(ToolrunError):
    """No answer: the connection was refused, reset or cut (``status`` 0,
    ``code`` ``connection_error``). Exported as ``toolrun.ConnectionError`` too."""


class APITimeoutError(APIConnectionError):
    """No answer within the client's ``timeout`` (``code`` ``timeout``)."""


class WaitTimeoutError(ToolrunError):
    """``runs.wait(timeout=...)`` gave up: the run was not final in time (``code``
    ``wait_timeout``). The run goes on; ``run`` is the last state seen."""

    def __init__(self, message: str, run: Any = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.run = run


class RunFailedError(ToolrunError):
    """A run ended ``failed`` or ``canceled`` where a succeeded one was needed (``toolrun.run()``,
    ``outputs.download()``); ``code`` ``run_not_succeeded``, ``run`` is the final run."""

    def __init__(self, message: str, run: Any = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.run = run


class WebhookVerificationError(ToolrunError):
    """A webhook delivery did not verify: answer it with 400 and do not act on it.

    ``reason`` (also ``code``) is one of ``missing_signature``, ``malformed_signature``,
    ``signature_mismatch``, ``timestamp_too_old``, ``timestamp_in_future``, ``invalid_payload``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, status=0, code=reason)
        self.reason = reason


_BY_STATUS = {
    400: InvalidRequestError,
    401: AuthenticationError,
    402: InsufficientSparksError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: InvalidRequestError,
    409: ConflictError,
    413: InvalidRequestError,
    415: InvalidRequestError,
    422: InvalidRequestError,
    429: RateLimitError,
    431: InvalidRequestError,
}

# Codes whose class is known whatever status carries them (a proxy may answer other statuses).
_BY_CODE = {
    "api_key_required": AuthenticationError,
    "invalid_api_key": AuthenticationError,
    "insufficient_sparks": InsufficientSparksError,
    "plan_upgrade_required": PermissionDeniedError,
    "consent_required": PermissionDeniedError,
    "insufficient_scope": PermissionDeniedError,
    "insufficient_role": PermissionDeniedError,
    "rate_limited": RateLimitError,
    "invalid_request": InvalidRequestError,
    "idempotency_key_reused": InvalidRequestError,
}


def error_class(status: int, code: Optional[str] = None) -> type:
    """The ToolrunError subclass for an error answer's status and code."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ToolrunError


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a Retry-After header (delta seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        return seconds if seconds >= 0 and seconds == seconds else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _field_errors(value: Any) -> List[Dict[str, Any]]:
    if not isinstance(value, list):
        return []
    out = []
    for entry in value:
        if not isinstance(entry, dict):
            continue
        item = dict(entry)
        loc = entry.get("loc")
        item["loc"] = [x for x in loc if isinstance(x, (str, int)) and not isinstance(x, bool)] if isinstance(loc, list) else []
        item["message"] = entry.get("message") if isinstance(entry.get("message"), str) else ""
        item["code"] = entry.get("code") if isinstance(entry.get("code"), str) else None
        out.append(item)
    return out


def error_from_response(status: int, headers: Mapping[str, str], raw: bytes) -> ToolrunError:
    """The typed error for a non-2xx answer, read from the error envelope when there is one."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw or "")
    body: Any = text
    try:
        body = json.loads(text) if text else None
    except ValueError:
        pass  # not JSON (a proxy's HTML page, say): keep the text
    header_id = _header(headers, "x-request-id")
    retry_after = parse_retry_after(_header(headers, "retry-after"))
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        code = envelope.get("code") if isinstance(envelope.get("code"), str) else "http_%d" % status
        message = envelope.get("message") if isinstance(envelope.get("message"), str) else "HTTP %d" % status
        request_id = envelope.get("request_id") if isinstance(envelope.get("request_id"), str) else header_id
        details = envelope.get("details") if isinstance(envelope.get("details"), dict) else None
        cls = error_class(status, code)
        return cls(
            message,
            status=status,
            code=code,
            request_id=request_id,
            errors=_field_errors(envelope.get("errors")),
            details=details,
            retry_after=retry_after,
            body=body,
        )
    snippet = " ".join(text.split())[:200]
    cls = error_class(status)
    return cls(
        "HTTP %d: %s" % (status, snippet) if snippet else "HTTP %d" % status,
        status=status,
        code="http_%d" % status,
        request_id=header_id,
        retry_after=retry_after,
        body=body,
    )


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    value = getter(name)
    if value is None and not hasattr(headers, "get_all"):
        # A plain dict: look the name up without regard to case.
        for key, v in headers.items():
            if key.lower() == name:
                return v
    return value
