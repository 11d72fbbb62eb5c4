"""Uploads: the spec's three steps, as the TypeScript SDK does them.

1. ``POST /v1/files/upload-url`` with ``file_name``, ``mime_type`` and ``size_bytes`` (the exact
   size); the answer gives ``part_size_bytes`` and one signed URL per part.
2. ``PUT`` part n's bytes (``part_size_bytes`` from offset ``(n - 1) * part_size_bytes``, the last
   part smaller) to its URL, a few parts at once, keeping each answer's ``ETag`` header exactly as
   it came. A part that fails with no answer, 408, 429 or 5xx is sent again, with backoff.
3. ``POST /v1/files/{file_id}/complete`` with ``upload_id`` and every part's number and ETag.

The client sends no checksum of its own: storage computes each part's MD5 and answers it as the
ETag, and the service checks the ETags and sizes at completion.
"""

import io
import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Union
from urllib.parse import quote

from ._http import IDEMPOTENT, REFUSED_ONLY, RetryInfo, Transport, fetch, is_retryable
from ._mime import extension_for, guess_mime_type
from .errors import ToolrunError, error_from_response
from .models import File

__all__ = ["Files", "UploadProgress", "UploadSource"]

#: What files.upload() takes: a path (str or os.PathLike), bytes, or a binary file object.
UploadSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO]


class UploadProgress:
    """Told to on_progress after each part is stored (and once before the first)."""

    def __init__(self, uploaded_bytes: int, total_bytes: int, parts_done: int, parts_total: int) -> None:
        self.uploaded_bytes = uploaded_bytes
        self.total_bytes = total_bytes
        self.parts_done = parts_done
        self.parts_total = parts_total

    def __repr__(self) -> str:
        return "UploadProgress(%d/%d bytes, %d/%d parts)" % (self.uploaded_bytes, self.total_bytes, self.parts_done, self.parts_total)


class _Source:
    """Where the bytes come from: a file read part by part (a lock keeps seek and read together),
    or bytes in memory."""

    def __init__(self, source: Any) -> None:
        self._lock = threading.Lock()
        self._owned: Optional[BinaryIO] = None
        self.name: Optional[str] = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._bytes: Optional[bytes] = bytes(source)
            self._fh: Optional[BinaryIO] = None
            self.size = len(self._bytes)
        elif isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            self.name = os.path.basename(path)
            self._owned = open(path, "rb")
            self._fh, self._bytes = self._owned, None
            self.size = os.fstat(self._fh.fileno()).st_size
        elif hasattr(source, "read"):
            raw_name = getattr(source, "name", None)
            if isinstance(raw_name, str) and raw_name and not raw_name.startswith("<"):
                self.name = os.path.basename(raw_name)
            seekable = getattr(source, "seekable", None)
            if callable(seekable) and seekable():
                self._fh, self._bytes = source, None
                self._start = source.tell()
                source.seek(0, io.SEEK_END)
                self.size = source.tell() - self._start
                source.seek(self._start)
            else:
                # Not seekable (a pipe, a socket): its size is known only once read.
                data = source.read()
                if isinstance(data, str):
                    raise TypeError("files.upload() needs a file opened in binary mode ('rb')")
                self._bytes, self._fh = bytes(data), None
                self.size = len(self._bytes)
        else:
            raise TypeError("files.upload() takes a path, bytes or a binary file object, not %s" % type(source).__name__)
        self.head = self.read(0, min(64, self.size))

    def read(self, offset: int, length: int) -> bytes:
        if self._bytes is not None:
            return self._bytes[offset:offset + length]
        assert self._fh is not None
        with self._lock:
            self._fh.seek(getattr(self, "_start", 0) + offset)
            chunks = []
            left = length
            while left > 0:
                chunk = self._fh.read(left)
                if not chunk:
                    break
                if isinstance(chunk, str):
                    raise TypeError("files.upload() needs a file opened in binary mode ('rb')")
                chunks.append(chunk)
                left -= len(chunk)
        data = b"".join(chunks)
        if len(data) != length:
            raise ToolrunError("The file changed while it was being uploaded", code="source_changed")
        return data

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()


class Files:
    """``client.files``: uploads."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def upload(
        self,
        source: UploadSource,
        file_name: Optional[str] = None,
        mime_type: Optional[str] = None,
        *,
        concurrency: int = 4,
        part_attempts: int = 4,
        part_timeout: float = 600.0,
        on_progress: Optional[Callable[[UploadProgress], None]] = None,
    ) -> File:
        """Uploads a whole file and completes it; returns the File (``status`` ``ready`` or
        ``rejected``).

        ``source`` is a path (str or pathlib.Path), bytes, or a binary file object (read from its
        current position). ``file_name`` defaults to the path's or file object's base name, else
        ``upload`` plus an extension for the type; ``mime_type`` to the type the bytes announce
        (PNG, JPEG, MP4, ...), then the name's extension.
        """
        src = _Source(source)
        try:
            if src.size == 0:
                raise ToolrunError("Cannot upload an empty file", code="empty_file")
            mime = mime_type or guess_mime_type(file_name or src.name, src.head)
            name = file_name or src.name or "upload" + extension_for(mime)
            upload, _ = self._http.request(
                "POST",
                "/v1/files/upload-url",
                body={"file_name": name, "mime_type": mime, "size_bytes": src.size},
                retry=REFUSED_ONLY,
            )
            parts = self._put_parts(upload, src, concurrency, part_attempts, part_timeout, on_progress)
            done, _ = self._http.request(
                "POST",
                "/v1/files/%s/complete" % _quote(upload["file_id"]),
                body={"upload_id": upload["upload_id"], "parts": parts},
                retry=REFUSED_ONLY,
            )
            return File.from_dict(done)
        finally:
            src.close()

    def _put_parts(
        self,
        upload: Dict[str, Any],
        src: _Source,
        concurrency: int,
        part_attempts: int,
        part_timeout: float,
        on_progress: Optional[Callable[[UploadProgress], None]],
    ) -> List[Dict[str, Any]]:
        part_size = int(upload["part_size_bytes"])
        parts = sorted(upload["parts"], key=lambda p: p["part_number"])
        progress = {"bytes": 0, "parts": 0}
        lock = threading.Lock()
        failed = threading.Event()
        etags: Dict[int, str] = {}

        def report() -> None:
            if on_progress is not None:
                on_progress(UploadProgress(progress["bytes"], src.size, progress["parts"], len(parts)))

        def one(part: Dict[str, Any]) -> None:
            if failed.is_set():
                return  # one failed part stops the others from starting
            number = int(part["part_number"])
            offset = (number - 1) * part_size
            length = max(0, min(part_size, src.size - offset))
            try:
                etag = self._put_part(part["url"], number, src.read(offset, length), part_attempts, part_timeout)
            except BaseException:
                failed.set()
                raise
            with lock:
                etags[number] = etag
                progress["bytes"] += length
                progress["parts"] += 1
                report()

        report()
        workers = max(1, min(concurrency, len(parts)))
        if workers == 1:
            for part in parts:
                one(part)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolrun-upload") as pool:
                futures = [pool.submit(one, part) for part in parts]
                wait(futures, return_when=FIRST_EXCEPTION)
                failed_futures = [f for f in futures if f.done() and f.exception() is not None]
                if failed_futures:
                    failed.set()
                    for f in futures:
                        f.cancel()
                    raise failed_futures[0].exception()  # type: ignore[misc]
                for f in futures:
                    f.result()
        return [{"part_number": n, "etag": etags[n]} for n in sorted(etags)]

    def _put_part(self, url: str, number: int, data: bytes, attempts: int, timeout: float) -> str:
        """PUTs one part, again after no answer, 408, 429 or 5xx; returns its ETag."""
        http = self._http
        attempt = 0
        while True:
            attempt += 1
            try:
                res = fetch("PUT", url, data, {"Content-Type": "application/octet-stream", "User-Agent": http.user_agent}, timeout)
                etag = res.headers.get("etag")
                if 200 <= res.status < 300 and etag:
                    return etag
                if 200 <= res.status < 300:
                    error: ToolrunError = ToolrunError(
                        "Part %d was stored but its answer has no ETag header" % number, status=res.status, code="missing_etag"
                    )
                else:
                    error = error_from_response(res.status, res.headers, res.body)
            except ToolrunError as err:
                error = err
            if attempt >= attempts or not is_retryable(IDEMPOTENT, error):
                error.message = "Part %d failed after %d attempt(s): %s" % (number, attempt, error.message)
                error.args = (error.message,)
                error.details = dict(error.details, part_number=number, attempts=attempt)
                raise error
            delay = http.delay_for(error, attempt - 1)
            if delay is None:
                delay = 1.0
            if http.on_retry is not None:
                http.on_retry(RetryInfo("PUT", "(part %d)" % number, attempt, delay, error))
            http.sleep(delay)


def _quote(value: str) -> str:
    return quote(str(value), safe="")
