"""``client.webhook_endpoints``: the team's webhook endpoints and their deliveries
(``/v1/webhook-endpoints``). The key needs the webhooks scope and an owner or admin behind it.

Answers are the API's dicts as they come (endpoints, deliveries and their lists grow fields
within v1). Changes are retried only when the service certainly did nothing (a 429 or a refused
connection): a repeated create would add a second endpoint, a repeated rotation would lose the
secret of the first answer."""

from typing import Any, Dict, List, Optional
from urllib.parse import quote, urlencode

from ._http import IDEMPOTENT, REFUSED_ONLY, Transport

__all__ = ["WebhookEndpoints"]


def _q(value: str) -> str:
    return quote(value, safe="")


class WebhookEndpoints:
    """``client.webhook_endpoints``."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def list(self) -> Dict[str, Any]:
        """The team's endpoints, oldest first: ``{"object": "list", "data": [...]}``."""
        data, _ = self._http.request("GET", "/v1/webhook-endpoints", retry=IDEMPOTENT)
        return data

    def create(self, url: str, events: Optional[List[str]] = None) -> Dict[str, Any]:
        """Adds an endpoint (an https:// URL on a public host) for ``events`` (all run events when
        None). The answer's ``signing_secret`` is shown only here: store it."""
        body: Dict[str, Any] = {"url": url}
        if events is not None:
            body["events"] = events
        data, _ = self._http.request("POST", "/v1/webhook-endpoints", body=body, retry=REFUSED_ONLY)
        return data

    def update(self, endpoint_id: str, enabled: Optional[bool] = None, events: Optional[List[str]] = None) -> Dict[str, Any]:
        """Pauses (``enabled=False``: pending deliveries are dropped), resumes, or replaces the
        events of an endpoint; what is left None is not changed."""
        body: Dict[str, Any] = {}
        if enabled is not None:
            body["enabled"] = enabled
        if events is not None:
            body["events"] = events
        data, _ = self._http.request("PATCH", "/v1/webhook-endpoints/%s" % _q(endpoint_id), body=body, retry=REFUSED_ONLY)
        return data

    def delete(self, endpoint_id: str) -> Dict[str, Any]:
        """Deletes an endpoint; its deliveries stop at once. ``{"object": "deleted", ...}``."""
        data, _ = self._http.request("DELETE", "/v1/webhook-endpoints/%s" % _q(endpoint_id), retry=REFUSED_ONLY)
        return data

    def test(self, endpoint_id: str) -> Dict[str, Any]:
        """Sends a signed ``ping`` now and reports how the endpoint answered (``delivered``,
        ``status_code``, ...)."""
        data, _ = self._http.request("POST", "/v1/webhook-endpoints/%s/test" % _q(endpoint_id), retry=REFUSED_ONLY)
        return data

    def rotate_secret(self, endpoint_id: str, expire_previous_in_seconds: Optional[int] = None) -> Dict[str, Any]:
        """A new signing secret, in the answer's ``signing_secret`` only: store it. The previous
        secret keeps signing beside it for ``expire_previous_in_seconds`` (0 to 86400; 86400 when
        None; 0 stops it at once)."""
        body: Dict[str, Any] = {}
        if expire_previous_in_seconds is not None:
            body["expire_previous_in_seconds"] = expire_previous_in_seconds
        data, _ = self._http.request("POST", "/v1/webhook-endpoints/%s/rotate-secret" % _q(endpoint_id), body=body, retry=REFUSED_ONLY)
        return data

    def deliveries(
        self,
        endpoint_id: str,
        limit: Optional[int] = None,
        starting_after: Optional[str] = None,
        status: Optional[str] = None,
    ) -> Dict[str, Any]:
        """One page of the endpoint's deliveries with their attempts, newest first; pass the last
        id as ``starting_after`` while ``has_more``. ``status``: pending, succeeded, failed or
        dropped."""
        query = {k: v for k, v in (("limit", limit), ("starting_after", starting_after), ("status", status)) if v is not None}
        path = "/v1/webhook-endpoints/%s/deliveries" % _q(endpoint_id) + ("?" + urlencode(query) if query else "")
        data, _ = self._http.request("GET", path, retry=IDEMPOTENT)
        return data

    def redeliver(self, endpoint_id: str, delivery_id: str) -> Dict[str, Any]:
        """Sends a given-up (failed) delivery again, with the same event id and body; the
        delivery as it now is (pending)."""
        path = "/v1/webhook-endpoints/%s/deliveries/%s/redeliver" % (_q(endpoint_id), _q(delivery_id))
        data, _ = self._http.request("POST", path, retry=REFUSED_ONLY)
        return data
