"""Typed results: small frozen dataclasses for the resources a script handles most (run, run
output, file, estimate, output URL, a page of runs).

Each keeps the whole JSON object it was read from in ``raw``, so fields the service adds within
v1 are not lost, and reads only the fields it names, so such additions never break it. The
other answers (``me()``, ``tools.list()``, ``tools.get()``) are returned as the plain dicts the
API sends.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["Run", "RunOutput", "RunList", "File", "Estimate", "OutputUrl", "FINAL_STATUSES"]

#: Statuses after which a run never changes.
FINAL_STATUSES = ("succeeded", "failed", "canceled")


def _opt_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_num(value: Any) -> Optional[float]:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class RunOutput:
    """One file a succeeded run produced; ``asset_id`` names it in ``outputs.url()``."""

    asset_id: str
    mime_type: Optional[str] = None
    width: Optional[int] = None
    height: Optional[int] = None
    duration_seconds: Optional[float] = None
    size_bytes: Optional[int] = None
    file_name: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RunOutput":
        return cls(
            asset_id=str(d.get("asset_id", "")),
            mime_type=_opt_str(d.get("mime_type")),
            width=_opt_int(d.get("width")),
            height=_opt_int(d.get("height")),
            duration_seconds=_opt_num(d.get("duration_seconds")),
            size_bytes=_opt_int(d.get("size_bytes")),
            file_name=_opt_str(d.get("file_name")),
            raw=dict(d),
        )


@dataclass(frozen=True)
class Run:
    """A run: ``status`` is queued, running, succeeded, failed or canceled (the last three final).
    Timestamps are the API's ISO 8601 strings."""

    id: str
    status: str
    tool_id: Optional[str] = None
    product_id: Optional[str] = None
    progress: float = 0.0
    cost_sparks: int = 0
    outputs: List[RunOutput] = field(default_factory=list)
    error: Optional[str] = None
    api_key_id: Optional[str] = None
    created_at: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: Not from the API: the local paths ``client.run(..., download=DIR)`` wrote, in the order of
    #: ``outputs``; empty otherwise.
    downloaded: List[str] = field(default_factory=list, compare=False)

    @property
    def is_final(self) -> bool:
        """True once the run is succeeded, failed or canceled: it never changes again."""
        return self.status in FINAL_STATUSES

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Run":
        outputs = d.get("outputs") if isinstance(d.get("outputs"), list) else []
        return cls(
            id=str(d.get("id", "")),
            status=str(d.get("status", "")),
            tool_id=_opt_str(d.get("tool_id")),
            product_id=_opt_str(d.get("product_id")),
            progress=float(_opt_num(d.get("progress")) or 0.0),
            cost_sparks=_opt_int(d.get("cost_sparks")) or 0,
            outputs=[RunOutput.from_dict(o) for o in outputs if isinstance(o, dict)],
            error=_opt_str(d.get("error")),
            api_key_id=_opt_str(d.get("api_key_id")),
            created_at=_opt_str(d.get("created_at")),
            started_at=_opt_str(d.get("started_at")),
            finished_at=_opt_str(d.get("finished_at")),
            raw=dict(d),
        )


@dataclass(frozen=True)
class RunList:
    """One page of ``runs.list()``: pass ``data[-1].id`` as ``starting_after`` while ``has_more``."""

    data: List[Run]
    has_more: bool

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RunList":
        data = d.get("data") if isinstance(d.get("data"), list) else []
        return cls(data=[Run.from_dict(r) for r in data if isinstance(r, dict)], has_more=bool(d.get("has_more")))


@dataclass(frozen=True)
class File:
    """A completed upload. ``status`` ``ready``: ``id`` works in media inputs; ``rejected``: the
    bytes are not a decodable image, video or audio file, and ``problem`` says why."""

    id: str
    status: str
    problem: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ready(self) -> bool:
        return self.status == "ready"

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "File":
        return cls(id=str(d.get("id", "")), status=str(d.get("status", "")), problem=_opt_str(d.get("problem")), raw=dict(d))


@dataclass(frozen=True)
class Estimate:
    """The exact price of some inputs: a run of them costs ``sparks`` and holds ``reserve_sparks``."""

    tool_id: str
    product_id: str
    sparks: int
    reserve_sparks: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Estimate":
        return cls(
            tool_id=str(d.get("tool_id", "")),
            product_id=str(d.get("product_id", "")),
            sparks=_opt_int(d.get("sparks")) or 0,
            reserve_sparks=_opt_int(d.get("reserve_sparks")) or 0,
            raw=dict(d),
        )


@dataclass(frozen=True)
class OutputUrl:
    """A short-lived signed URL for one output: fetch it straight away."""

    asset_id: str
    url: str
    expires_in_seconds: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "OutputUrl":
        return cls(
            asset_id=str(d.get("asset_id", "")),
            url=str(d.get("url", "")),
            expires_in_seconds=_opt_int(d.get("expires_in_seconds")) or 0,
            raw=dict(d),
        )
