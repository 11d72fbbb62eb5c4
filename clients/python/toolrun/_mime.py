"""Media types for uploads: from the first bytes when they are a known media format (the bytes
are what the service checks anyway), else from the file name's extension. Mirrors the TypeScript
SDK's mime.ts."""

import os
from typing import Optional

_BY_EXTENSION = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "tif": "image/tiff",
    "tiff": "image/tiff",
    "bmp": "image/bmp",
    "avif": "image/avif",
    "heic": "image/heic",
    "heif": "image/heif",
    "svg": "image/svg+xml",
    "mp4": "video/mp4",
    "m4v": "video/x-m4v",
    "mov": "video/quicktime",
    "webm": "video/webm",
    "mkv": "video/x-matroska",
    "avi": "video/x-msvideo",
    "mp3": "audio/mpeg",
    "m4a": "audio/mp4",
    "aac": "audio/aac",
    "wav": "audio/wav",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "flac": "audio/flac",
    "json": "application/json",
    "pdf": "application/pdf",
    "txt": "text/plain",
}

_EXTENSION_OF = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/tiff": ".tif",
    "image/bmp": ".bmp",
    "image/avif": ".avif",
    "image/heic": ".heic",
    "video/mp4": ".mp4",
    "video/quicktime": ".mov",
    "video/webm": ".webm",
    "video/x-matroska": ".mkv",
    "video/x-msvideo": ".avi",
    "audio/mpeg": ".mp3",
    "audio/mp4": ".m4a",
    "audio/wav": ".wav",
    "audio/ogg": ".ogg",
    "audio/flac": ".flac",
    "application/json": ".json",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
}

_HEIC_BRANDS = {b"heic", b"heix", b"hevc", b"heim", b"heis", b"mif1", b"msf1"}


def sniff_mime_type(head: bytes) -> Optional[str]:
    """The media type the first bytes (at least 32 of them when the file has them) announce, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF":
        kind = head[8:12]
        if kind == b"WEBP":
            return "image/webp"
        if kind == b"WAVE":
            return "audio/wav"
        if kind == b"AVI ":
            return "video/x-msvideo"
    if head.startswith(b"II*\x00") or head.startswith(b"MM\x00*"):
        return "image/tiff"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return "image/avif"
        if brand in _HEIC_BRANDS:
            return "image/heic"
        if brand == b"qt  ":
            return "video/quicktime"
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4"
        return "video/mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "video/webm" if b"webm" in head else "video/x-matroska"
    if head[:4] == b"OggS":
        return "audio/ogg"
    if head[:4] == b"fLaC":
        return "audio/flac"
    if head[:3] == b"ID3" or (len(head) >= 2 and head[0] == 0xFF and (head[1] & 0xE0) == 0xE0):
        return "audio/mpeg"
    if head[:5] == b"%PDF-":
        return "application/pdf"
    if head[:2] == b"BM" and len(head) >= 14:
        return "image/bmp"
    return None


def guess_mime_type(file_name: Optional[str], head: bytes) -> str:
    """The media type of a file: its bytes first, then its name, else application/octet-stream."""
    sniffed = sniff_mime_type(head)
    if sniffed:
        return sniffed
    if file_name:
        ext = os.path.splitext(file_name)[1].lower().lstrip(".")
        if ext in _BY_EXTENSION:
            return _BY_EXTENSION[ext]
    return "application/octet-stream"


def extension_for(mime_type: Optional[str]) -> str:
    """A file-name extension (with the dot) for a media type, or '' when none is known."""
    if not mime_type:
        return ""
    return _EXTENSION_OF.get(mime_type.split(";")[0].strip().lower(), "")
