"""Verifying webhook deliveries: the reference verifier of the spec, as the TypeScript SDK's."""

import hashlib
import hmac
import json
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Union

from .errors import WebhookVerificationError

__all__ = ["verify_webhook", "SIGNATURE_HEADER", "DEFAULT_TOLERANCE"]

#: The header a delivery's signature comes in.
SIGNATURE_HEADER = "Service-Signature"
#: Largest allowed distance, in seconds, between the signature's timestamp and now, either way.
DEFAULT_TOLERANCE = 300

_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")


def verify_webhook(
    payload: Union[bytes, bytearray, memoryview, str],
    signature_header: Union[str, Sequence[str], None],
    secret: str,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """Checks a delivery's ``Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`` and
    returns the parsed event (a dict: ``id``, ``object``, ``type``, ``created_at``, ``data``).

    Pass the request body exactly as it arrived (bytes), not JSON parsed and serialized again: the
    signature is the hex HMAC-SHA256, keyed with the endpoint's ``whsec_`` secret, of ``t``, a dot
    and those bytes. Any one matching ``v1`` is enough (several come while a secret rotates); the
    comparison takes constant time (``hmac.compare_digest``); a timestamp more than ``tolerance``
    seconds from ``now`` (default: the clock) either way is refused as a replay.

    Raises WebhookVerificationError (``reason``: ``missing_signature``, ``malformed_signature``,
    ``signature_mismatch``, ``timestamp_too_old``, ``timestamp_in_future``, ``invalid_payload``):
    answer such a delivery with 400 and do not act on it.
    """
    if signature_header is not None and not isinstance(signature_header, str):
        signature_header = ",".join(signature_header)
    if not signature_header or not signature_header.strip():
        raise WebhookVerificationError("missing_signature", "No Service-Signature header")
    if not secret:
        raise ValueError("verify_webhook needs the endpoint's signing secret (whsec_...)")

    timestamps: List[str] = []
    signatures: List[str] = []
    for item in signature_header.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            continue
        key, value = key.strip(), value.strip()
        if key == "t":
            timestamps.append(value)
        elif key == "v1":
            signatures.append(value)
    if len(timestamps) != 1 or not _TIMESTAMP.match(timestamps[0]):
        raise WebhookVerificationError("malformed_signature", "The Service-Signature header needs exactly one t=<unix seconds>")
    if not signatures:
        raise WebhookVerificationError("malformed_signature", "The Service-Signature header has no v1 signature")
    t = timestamps[0]

    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    expected = hmac.new(secret.encode("utf-8"), t.encode("ascii") + b"." + body, hashlib.sha256).hexdigest().encode("ascii")
    matched = False
    for candidate in signatures:
        given = candidate.lower().encode("utf-8", "replace")
        # Every candidate is compared (no early exit), each in constant time.
        if hmac.compare_digest(given, expected):
            matched = True
    if not matched:
        raise WebhookVerificationError(
            "signature_mismatch",
            "No v1 signature matches this body and secret (was the body re-serialized, or is it another endpoint's secret?)",
        )

    age = (time.time() if now is None else now) - int(t)
    if age > tolerance:
        raise WebhookVerificationError("timestamp_too_old", "The signature is %d s old (tolerance %g s): a replay?" % (age, tolerance))
    if -age > tolerance:
        raise WebhookVerificationError("timestamp_in_future", "The signature is %d s in the future (tolerance %g s)" % (-age, tolerance))

    try:
        event: Any = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WebhookVerificationError("invalid_payload", "The signed body is not JSON") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("invalid_payload", "The signed body is not an event object")
    if not isinstance(event.get("id"), str) or not isinstance(event.get("type"), str):
        raise WebhookVerificationError("invalid_payload", "The event has no id or type")
    if not isinstance(event.get("data"), dict):
        event["data"] = {}
    return event
