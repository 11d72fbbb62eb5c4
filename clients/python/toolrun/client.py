"""The client: ``Toolrun(api_key=..., base_url=...)``."""

import dataclasses
import io
import os
import platform
import re
from typing import Any, Callable, Dict, List, Optional, Union
from urllib.parse import quote

from ._http import IDEMPOTENT, RetryInfo, Transport
from .endpoints import WebhookEndpoints
from .errors import NotFoundError, RunFailedError
from .files import Files
from .models import Estimate, Run
from .runs import Outputs, Runs
from .streams import Events

__version__ = "0.1.0"

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
MEDIA_KINDS = ("image", "video", "audio")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def estimate_body(inputs: Optional[Dict[str, Any]], duration_seconds: Optional[float]) -> Dict[str, Any]:
    body: Dict[str, Any] = {}
    if inputs is not None:
        body["inputs"] = inputs
    if duration_seconds is not None:
        body["duration_seconds"] = duration_seconds
    return body


class Tools:
    """``client.tools``."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def list(self) -> List[Dict[str, Any]]:
        """The tools this key can use (the ``data`` of ``GET /v1/tools``), as the API's dicts:
        ``id``, ``name``, ``description``, ``family``, ``inputs``, ``output_kind``, ``allowed``,
        ``estimate_hint``, ..."""
        data, _ = self._http.request("GET", "/v1/tools", retry=IDEMPOTENT)
        return list(data.get("data") or [])

    def get(self, tool_id: str) -> Dict[str, Any]:
        """One tool from the list (the API has no per-tool endpoint); NotFoundError
        ``tool_not_found`` when the key has no such tool."""
        for tool in self.list():
            if tool.get("id") == tool_id:
                return tool
        raise NotFoundError("No tool %r is available to this key" % tool_id, status=404, code="tool_not_found")

    def estimate(self, tool_id: str, inputs: Optional[Dict[str, Any]] = None, duration_seconds: Optional[float] = None) -> Estimate:
        """The exact price of these inputs; starts and spends nothing."""
        data, _ = self._http.request(
            "POST", "/v1/tools/%s/estimate" % quote(tool_id, safe=""), body=estimate_body(inputs, duration_seconds), retry=IDEMPOTENT
        )
        return Estimate.from_dict(data)


class Toolrun:
    """A client of the Tool-Run API v1.

    ``api_key`` defaults to ``TOOLRUN_API_KEY``, ``base_url`` (without ``/v1``) to
    ``TOOLRUN_BASE_URL``, then ``http://127.0.0.1:8080``. ``timeout`` is the time limit of one
    attempt in seconds; ``max_retries`` the retries of a retryable failure (a 429 or 503 honours
    Retry-After up to ``max_retry_after`` seconds; otherwise exponential backoff with jitter from
    ``backoff_base`` seconds). ``on_retry`` is called before each automatic retry.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        *,
        max_retry_after: float = 60.0,
        backoff_base: float = 0.5,
        on_retry: Optional[Callable[[RetryInfo], None]] = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("TOOLRUN_API_KEY")
        if not key:
            raise ValueError("Toolrun needs an API key: pass api_key=... or set TOOLRUN_API_KEY")
        url = base_url if base_url is not None else os.environ.get("TOOLRUN_BASE_URL") or DEFAULT_BASE_URL
        url = url.rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        self.base_url = url
        self._http = Transport(
            api_key=key,
            base_url=url,
            timeout=float(timeout),
            max_retries=int(max_retries),
            max_retry_after=float(max_retry_after),
            backoff_base=float(backoff_base),
            user_agent="toolrun-python/%s python/%s" % (__version__, platform.python_version()),
            on_retry=on_retry,
        )
        self.tools = Tools(self._http)
        self.files = Files(self._http)
        self.runs = Runs(self._http)
        self.outputs = Outputs(self._http, self.runs)
        self.webhook_endpoints = WebhookEndpoints(self._http)
        self.events = Events(self._http)

    def __repr__(self) -> str:
        return "Toolrun(base_url=%r)" % self.base_url

    def me(self) -> Dict[str, Any]:
        """The team and key making the request, with the Sparks available now (the API's dict:
        ``team``, ``api_key``, ``sparks_available``)."""
        data, _ = self._http.request("GET", "/v1/me", retry=IDEMPOTENT)
        return data

    def estimate(self, tool_id: str, inputs: Optional[Dict[str, Any]] = None, duration_seconds: Optional[float] = None) -> Estimate:
        """The exact price of these inputs; starts and spends nothing (``tools.estimate``)."""
        return self.tools.estimate(tool_id, inputs, duration_seconds)

    def run(
        self,
        tool_id: str,
        inputs: Optional[Dict[str, Any]] = None,
        download: Optional[Union[str, "os.PathLike[str]"]] = None,
        *,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
        check: bool = True,
        on_progress: Optional[Callable[[Run], None]] = None,
    ) -> Run:
        """Uploads local files, starts the run, waits for it, and with ``download`` downloads its
        outputs into that directory (their paths in the returned run's ``downloaded``).

        In ``inputs``, a value (or an item of a list) that is a ``pathlib.Path``, bytes or a binary
        file object is uploaded and replaced by its file id; so is a ``str`` naming an existing
        file when the tool's slot takes media (image, video or audio). A single uploaded value is
        sent as a one-item list, as media slots take. File ids pass through.

        With ``check`` (the default), a run that ends failed or canceled raises RunFailedError
        (its ``run`` attribute is the run); without it the run is returned as it is.
        ``timeout`` bounds the wait (WaitTimeoutError).
        """
        resolved = self._upload_inputs(tool_id, inputs) if inputs else inputs
        started = self.runs.start(tool_id, resolved, idempotency_key)
        done = self.runs.wait(started, timeout=timeout, on_progress=on_progress)
        if not done.succeeded:
            if check:
                raise RunFailedError(
                    "Run %s of %s %s%s" % (done.id, tool_id, done.status, ": %s" % done.error if done.error else ""),
                    run=done,
                    code="run_not_succeeded",
                    details={"run_id": done.id, "status": done.status, "error": done.error},
                )
            return done
        if download is not None:
            done = dataclasses.replace(done, downloaded=self.outputs.download(done, download))
        return done

    def _upload_inputs(self, tool_id: str, inputs: Dict[str, Any]) -> Dict[str, Any]:
        media_slots: Optional[set] = None

        def is_media_slot(name: str) -> bool:
            nonlocal media_slots
            if media_slots is None:
                tool = self.tools.get(tool_id)
                media_slots = {i.get("name") for i in tool.get("inputs") or [] if i.get("kind") in MEDIA_KINDS}
            return name in media_slots

        def local(value: Any, name: str) -> bool:
            if isinstance(value, (bytes, bytearray, memoryview, os.PathLike)) or isinstance(value, io.IOBase) or (
                hasattr(value, "read") and not isinstance(value, str)
            ):
                return True
            if isinstance(value, str) and not _UUID.match(value) and os.path.isfile(value):
                return is_media_slot(name)
            return False

        out: Dict[str, Any] = {}
        for name, value in inputs.items():
            if isinstance(value, (list, tuple)):
                out[name] = [self.files.upload(v).id if local(v, name) else v for v in value]
            elif local(value, name):
                out[name] = [self.files.upload(value).id]
            else:
                out[name] = value
        return out
