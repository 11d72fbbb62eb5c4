"""Toolrun: a Python client of the Tool-Run API v1, standard library only.

    import toolrun

    client = toolrun.Toolrun()  # TOOLRUN_API_KEY, TOOLRUN_BASE_URL
    run = client.run("image_upscale", {"image": "photo.png"}, download="results")
    print(run.status, run.cost_sparks, run.downloaded)
"""

from typing import Any, Optional

from ._http import RetryInfo, is_retryable, retry_delay
from .client import Toolrun, Tools, __version__
from .endpoints import WebhookEndpoints
from .errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ConflictError,
    InsufficientSparksError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RunFailedError,
    ServerError,
    ToolrunError,
    WaitTimeoutError,
    WebhookVerificationError,
)
from .files import Files, UploadProgress
from .models import FINAL_STATUSES, Estimate, File, OutputUrl, Run, RunList, RunOutput
from .runs import Outputs, Runs
from .streams import Events, RunEvent, StreamedEvent
from .webhooks import verify_webhook

#: ``toolrun.ConnectionError`` is APIConnectionError. Not in ``__all__``, so ``from toolrun import *``
#: does not shadow the builtin ConnectionError.
ConnectionError = APIConnectionError


def run(tool_id: str, inputs: Optional[dict] = None, download: Optional[Any] = None, **kwargs: Any) -> Run:
    """``Toolrun().run(...)`` with the key and base URL from the environment."""
    return Toolrun().run(tool_id, inputs, download, **kwargs)


__all__ = [
    "__version__",
    "Toolrun",
    "Tools",
    "Files",
    "Runs",
    "Outputs",
    "WebhookEndpoints",
    "Events",
    "RunEvent",
    "StreamedEvent",
    "run",
    "verify_webhook",
    "UploadProgress",
    "RetryInfo",
    "is_retryable",
    "retry_delay",
    "Run",
    "RunOutput",
    "RunList",
    "File",
    "Estimate",
    "OutputUrl",
    "FINAL_STATUSES",
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
]
