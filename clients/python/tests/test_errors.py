"""Error answers become typed errors: class by status and code, every envelope field kept."""

import json
import unittest

import _support  # noqa: F401

import toolrun
from toolrun.errors import error_from_response


def answer(status, code, **extra):
    body = {"error": dict({"code": code, "message": "m " + code, "request_id": "req-9", "errors": None, "details": None}, **extra)}
    return error_from_response(status, {"X-Request-Id": "hdr-9"}, json.dumps(body).encode())


class ErrorMapping(unittest.TestCase):
    def test_classes_by_status_and_code(self):
        cases = [
            (400, "bad_request", toolrun.InvalidRequestError),
            (401, "api_key_required", toolrun.AuthenticationError),
            (401, "invalid_api_key", toolrun.AuthenticationError),
            (402, "insufficient_sparks", toolrun.InsufficientSparksError),
            (403, "insufficient_scope", toolrun.PermissionDeniedError),
            (403, "plan_upgrade_required", toolrun.PermissionDeniedError),
            (403, "consent_required", toolrun.PermissionDeniedError),
            (404, "run_not_found", toolrun.NotFoundError),
            (404, "tool_not_found", toolrun.NotFoundError),
            (405, "method_not_allowed", toolrun.InvalidRequestError),
            (408, "request_timeout", toolrun.ToolrunError),
            (409, "output_not_ready", toolrun.ConflictError),
            (409, "run_not_cancelable", toolrun.ConflictError),
            (413, "payload_too_large", toolrun.InvalidRequestError),
            (415, "unsupported_media_type", toolrun.InvalidRequestError),
            (422, "invalid_request", toolrun.InvalidRequestError),
            (422, "idempotency_key_reused", toolrun.InvalidRequestError),
            (429, "rate_limited", toolrun.RateLimitError),
            (500, "internal_error", toolrun.ServerError),
            (503, "service_unavailable", toolrun.ServerError),
            (418, "something_new", toolrun.ToolrunError),
        ]
        for status, code, cls in cases:
            err = answer(status, code)
            self.assertIs(type(err), cls, (status, code))
            self.assertIsInstance(err, toolrun.ToolrunError)
            self.assertEqual((err.status, err.code, err.message, err.request_id), (status, code, "m " + code, "req-9"))

    def test_field_errors_and_details(self):
        err = answer(
            422,
            "invalid_request",
            errors=[{"loc": ["body", "parts", 2, "etag"], "message": "does not match", "code": "etag_mismatch", "extra": 1}, "junk"],
            details={"note": "x"},
        )
        self.assertEqual(err.errors, [{"loc": ["body", "parts", 2, "etag"], "message": "does not match", "code": "etag_mismatch", "extra": 1}])
        self.assertEqual(err.details, {"note": "x"})
        self.assertEqual(answer(422, "invalid_request").errors, [])

    def test_retry_after_and_headers_without_an_envelope(self):
        err = error_from_response(502, {"x-request-id": "hdr-1", "Retry-After": "4"}, b"<html>\n<h1>Bad   gateway</h1></html>")
        self.assertIs(type(err), toolrun.ServerError)
        self.assertEqual((err.status, err.code, err.request_id, err.retry_after), (502, "http_502", "hdr-1", 4.0))
        self.assertEqual(err.message, "HTTP 502: <html> <h1>Bad gateway</h1></html>")
        self.assertEqual(err.body, "<html>\n<h1>Bad   gateway</h1></html>")
        self.assertIs(type(error_from_response(404, {}, b"")), toolrun.NotFoundError)
        # An envelope without its request_id takes the header's.
        no_id = error_from_response(429, {"X-Request-Id": "hdr-2", "Retry-After": "1"}, b'{"error":{"code":"rate_limited","message":"slow down"}}')
        self.assertEqual((no_id.request_id, no_id.retry_after), ("hdr-2", 1.0))

    def test_text(self):
        err = answer(404, "run_not_found")
        self.assertEqual(str(err), "m run_not_found (run_not_found, HTTP 404) [request req-9]")
        self.assertIn("NotFoundError(status=404", repr(err))
        self.assertEqual(str(toolrun.APIConnectionError("down", code="connection_error")), "down (connection_error, no answer)")

    def test_the_connection_error_alias(self):
        self.assertIs(toolrun.ConnectionError, toolrun.APIConnectionError)
        self.assertTrue(issubclass(toolrun.APITimeoutError, toolrun.ConnectionError))
        self.assertNotIn("ConnectionError", toolrun.__all__)


if __name__ == "__main__":
    unittest.main()
