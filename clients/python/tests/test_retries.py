"""The retry and backoff rules, against a local HTTP server over real sockets (no mocks of the
client): 429 and 503 retried as the TypeScript SDK does, Retry-After honoured, writes retried only
when nothing was done, the Idempotency-Key kept across retries, parts sent again."""

import socket
import threading
import unittest

import _support
from _support import FakeServer, envelope

import toolrun
from toolrun import (
    APIConnectionError,
    APITimeoutError,
    RateLimitError,
    ServerError,
    ToolrunError,
    is_retryable,
    retry_delay,
)
from toolrun.errors import parse_retry_after

RUN_ID = "5e1d7c3a-2b4f-4a6e-8c9d-0f1e2a3b4c5d"
ME = {"object": "me", "team": {"id": "t", "name": "Team", "plan": "pro"}, "api_key": {"id": "k"}, "sparks_available": 7}


def run_json(status: str) -> dict:
    return {"object": "run", "id": RUN_ID, "tool_id": "image_upscale", "product_id": "image_upscale", "status": status,
            "progress": 1 if status == "succeeded" else 0, "cost_sparks": 3, "outputs": [], "error": None,
            "api_key_id": "k", "created_at": None, "started_at": None, "finished_at": None}


def client(server: FakeServer, **kwargs) -> toolrun.Toolrun:
    retries = []
    opts = dict(api_key="svc_test_fake", base_url=server.url, backoff_base=0.001, timeout=10, on_retry=retries.append)
    opts.update(kwargs)
    c = toolrun.Toolrun(**opts)
    c.retries = retries  # type: ignore[attr-defined]
    return c


def scripted(answers):
    """Answers in turn, the last one again once they run out."""
    state = {"n": 0}

    def handler(req, server):
        i = min(state["n"], len(answers) - 1)
        state["n"] += 1
        return answers[i]

    return handler


class RetryOverHttp(unittest.TestCase):
    def test_429_then_200_is_retried_after_retry_after(self):
        answers = [(429, {"Retry-After": "0"}, envelope("rate_limited", details={"limit_per_minute": 60})), (200, {}, ME)]
        with FakeServer(scripted(answers)) as server:
            c = client(server)
            self.assertEqual(c.me()["sparks_available"], 7)
            self.assertEqual(server.count("GET", "/v1/me"), 2)
            self.assertEqual(len(c.retries), 1)
            info = c.retries[0]
            self.assertEqual((info.method, info.path, info.attempt, info.delay), ("GET", "/v1/me", 1, 0.0))
            self.assertIsInstance(info.error, RateLimitError)
            self.assertEqual(info.error.retry_after, 0.0)
            for req in server.requests:
                self.assertEqual(req.headers["authorization"], "Bearer svc_test_fake")

    def test_503_without_retry_after_backs_off_then_succeeds(self):
        answers = [(503, {}, envelope("service_unavailable")), (503, {}, envelope("service_unavailable")), (200, {}, ME)]
        with FakeServer(scripted(answers)) as server:
            c = client(server, backoff_base=0.002)
            c.me()
            self.assertEqual(server.count(), 3)
            self.assertEqual([r.attempt for r in c.retries], [1, 2])
            # Half to all of base * 2**n.
            self.assertTrue(0.001 <= c.retries[0].delay <= 0.002, c.retries[0].delay)
            self.assertTrue(0.002 <= c.retries[1].delay <= 0.004, c.retries[1].delay)

    def test_gives_up_after_max_retries_with_the_last_error(self):
        answer = (429, {"Retry-After": "0", "X-Request-Id": "r-429"}, envelope("rate_limited", details={"limit_per_minute": 30}, request_id="r-429"))
        with FakeServer(scripted([answer])) as server:
            c = client(server, max_retries=2)
            with self.assertRaises(RateLimitError) as caught:
                c.runs.get(RUN_ID)
            err = caught.exception
            self.assertEqual((err.status, err.code, err.request_id, err.retry_after), (429, "rate_limited", "r-429", 0.0))
            self.assertEqual(err.details, {"limit_per_minute": 30})
            self.assertEqual(server.count(), 3)

    def test_a_retry_after_over_the_limit_is_not_waited_out(self):
        with FakeServer(scripted([(429, {"Retry-After": "120"}, envelope("rate_limited"))])) as server:
            c = client(server, max_retry_after=60)
            with self.assertRaises(RateLimitError) as caught:
                c.me()
            self.assertEqual(caught.exception.retry_after, 120.0)
            self.assertEqual(server.count(), 1)
            self.assertEqual(c.retries, [])

    def test_writes_are_retried_on_429_but_not_on_5xx(self):
        with FakeServer(scripted([(503, {}, envelope("service_unavailable"))])) as server:
            c = client(server)
            with self.assertRaises(ServerError) as caught:
                c.runs.cancel(RUN_ID)
            self.assertEqual((caught.exception.status, caught.exception.code), (503, "service_unavailable"))
            self.assertEqual(server.count("POST", "/v1/runs/%s/cancel" % RUN_ID), 1)
        with FakeServer(scripted([(429, {"Retry-After": "0"}, envelope("rate_limited")), (200, {}, run_json("canceled"))])) as server:
            c = client(server)
            self.assertEqual(c.runs.cancel(RUN_ID).status, "canceled")
            self.assertEqual(server.count(), 2)
            # A POST without a body sends none (and so no Content-Type the service would refuse).
            self.assertEqual(server.requests[0].body, b"")
            self.assertNotIn("content-type", server.requests[0].headers)

    def test_start_retries_with_the_same_idempotency_key(self):
        answers = [(502, {}, "<html>bad gateway</html>"), (202, {}, run_json("queued"))]
        with FakeServer(scripted(answers)) as server:
            c = client(server)
            run = c.runs.start("image_upscale", {"image": ["f"]})
            self.assertEqual(run.status, "queued")
            keys = [r.headers.get("idempotency-key") for r in server.requests]
            self.assertEqual(len(keys), 2)
            self.assertTrue(keys[0])
            self.assertEqual(keys[0], keys[1])
            self.assertEqual(server.requests[1].json(), {"inputs": {"image": ["f"]}})
            self.assertIsInstance(c.retries[0].error, ServerError)
            self.assertEqual(c.retries[0].error.code, "http_502")
            # Given, the key is sent as it is.
            c.runs.start("image_upscale", {}, idempotency_key="mine-1")
            self.assertEqual(server.requests[-1].headers["idempotency-key"], "mine-1")

    def test_connection_refused_is_retried_then_raised(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        retries = []
        c = toolrun.Toolrun(api_key="svc_test_fake", base_url="http://127.0.0.1:%d" % port, max_retries=2, backoff_base=0.001, on_retry=retries.append)
        with self.assertRaises(toolrun.ConnectionError) as caught:
            c.me()
        self.assertIsInstance(caught.exception, APIConnectionError)
        self.assertEqual((caught.exception.status, caught.exception.code), (0, "connection_error"))
        self.assertEqual(len(retries), 2)
        # Refused: nothing was sent, so a write is retried too.
        retries.clear()
        with self.assertRaises(APIConnectionError):
            c.runs.cancel(RUN_ID)
        self.assertEqual(len(retries), 2)

    def test_no_answer_within_the_timeout(self):
        release = threading.Event()

        def hang(req, server):
            release.wait(30)
            return (200, {}, ME)

        with FakeServer(hang) as server:
            try:
                c = client(server, timeout=0.2, max_retries=0)
                with self.assertRaises(APITimeoutError) as caught:
                    c.me()
                self.assertEqual((caught.exception.status, caught.exception.code), (0, "timeout"))
            finally:
                release.set()


class Waiting(unittest.TestCase):
    def test_wait_asks_the_service_to_hold_the_answer(self):
        answers = [(200, {"Preference-Applied": "wait=55"}, run_json("running")), (200, {}, run_json("succeeded"))]
        with FakeServer(scripted(answers)) as server:
            c = client(server, timeout=60)
            seen = []
            done = c.runs.wait(RUN_ID, poll=0.01, on_progress=lambda r: seen.append(r.status))
            self.assertEqual(done.status, "succeeded")
            self.assertEqual(seen, ["running", "succeeded"])
            self.assertEqual([r.headers.get("prefer") for r in server.requests], ["wait=55", "wait=55"])

    def test_wait_waits_out_a_rate_limit_and_returns_a_final_run_at_once(self):
        answers = [(429, {"Retry-After": "0"}, envelope("rate_limited")), (200, {}, run_json("failed"))]
        with FakeServer(scripted(answers)) as server:
            c = client(server, max_retries=0)
            self.assertEqual(c.runs.wait(RUN_ID, poll=0.01).status, "failed")
            self.assertEqual(server.count(), 2)
            # A final run passed in is returned without a request.
            final = toolrun.Run.from_dict(run_json("canceled"))
            self.assertIs(c.runs.wait(final), final)
            self.assertEqual(server.count(), 2)

    def test_wait_timeout(self):
        with FakeServer(scripted([(200, {}, run_json("running"))])) as server:
            c = client(server, timeout=10)
            with self.assertRaises(toolrun.WaitTimeoutError) as caught:
                c.runs.wait(RUN_ID, timeout=0.05, poll=0.01)
            self.assertEqual(caught.exception.code, "wait_timeout")
            self.assertEqual(caught.exception.run.status, "running")
            self.assertGreaterEqual(server.count(), 1)
            # Under a second left: no Prefer header (the service takes whole seconds).
            self.assertNotIn("prefer", server.requests[0].headers)


class UploadParts(unittest.TestCase):
    def test_parts_put_with_retries_etags_kept_and_completed(self):
        data = bytes(range(10)) * 1  # 10 bytes in parts of 4: 4, 4, 2
        stored = {}
        puts = {}

        def handler(req, server):
            if req.method == "POST" and req.path == "/v1/files/upload-url":
                return (201, {}, {"object": "file_upload", "file_id": "f-1", "upload_id": "u-1", "part_size_bytes": 4,
                                  "parts": [{"part_number": n, "url": "%s/parts/%d?sig=x" % (server.url, n)} for n in (3, 1, 2)],
                                  "expires_in_seconds": 3600})
            if req.method == "PUT" and req.path.startswith("/parts/"):
                n = int(req.path.split("/")[2].split("?")[0])
                puts[n] = puts.get(n, 0) + 1
                if n == 2 and puts[n] == 1:
                    return (503, {}, "storage busy")
                stored[n] = req.body
                return (200, {"ETag": '"etag-%d"' % n}, b"")
            if req.method == "POST" and req.path == "/v1/files/f-1/complete":
                return (200, {}, {"object": "file", "id": "f-1", "status": "ready"})
            return (404, {}, envelope("not_found"))

        with FakeServer(handler) as server:
            c = client(server)
            progress = []
            file = c.files.upload(data, file_name="data.bin", concurrency=2, on_progress=progress.append)
            self.assertEqual((file.id, file.status, file.ready), ("f-1", "ready", True))
            create = [r for r in server.requests if r.path == "/v1/files/upload-url"][0].json()
            self.assertEqual(create, {"file_name": "data.bin", "mime_type": "application/octet-stream", "size_bytes": 10})
            self.assertEqual(b"".join(stored[n] for n in (1, 2, 3)), data)
            self.assertEqual(puts, {1: 1, 2: 2, 3: 1})
            complete = [r for r in server.requests if r.path == "/v1/files/f-1/complete"][0].json()
            self.assertEqual(complete, {"upload_id": "u-1", "parts": [{"part_number": n, "etag": '"etag-%d"' % n} for n in (1, 2, 3)]})
            for req in server.requests:
                if req.method == "PUT":
                    self.assertNotIn("authorization", req.headers, "the key never goes to storage")
                    self.assertEqual(req.headers["content-type"], "application/octet-stream")
            self.assertEqual([(p.uploaded_bytes, p.parts_done) for p in progress][0], (0, 0))
            self.assertEqual((progress[-1].uploaded_bytes, progress[-1].parts_done, progress[-1].parts_total), (10, 3, 3))
            self.assertEqual([r.attempt for r in c.retries], [1])

    def test_a_part_that_keeps_failing_fails_the_upload_naming_it(self):
        def handler(req, server):
            if req.path == "/v1/files/upload-url":
                return (201, {}, {"object": "file_upload", "file_id": "f-2", "upload_id": "u-2", "part_size_bytes": 8,
                                  "parts": [{"part_number": 1, "url": server.url + "/parts/1"}], "expires_in_seconds": 60})
            if req.method == "PUT":
                return (500, {}, envelope("internal_error"))
            return (404, {}, envelope("not_found"))

        with FakeServer(handler) as server:
            c = client(server)
            png = _support.make_png(2, 2)
            with self.assertRaises(ServerError) as caught:
                c.files.upload(png, part_attempts=3)
            err = caught.exception
            self.assertEqual((err.status, err.code), (500, "internal_error"))
            self.assertEqual(err.details["part_number"], 1)
            self.assertEqual(err.details["attempts"], 3)
            self.assertIn("Part 1 failed after 3 attempt(s)", str(err))
            self.assertEqual(server.count("PUT"), 3)
            self.assertEqual(server.count("POST", "/v1/files/f-2/complete"), 0)
            create = [r for r in server.requests if r.path == "/v1/files/upload-url"][0].json()
            self.assertEqual((create["file_name"], create["mime_type"]), ("upload.png", "image/png"))


class RetryRules(unittest.TestCase):
    """The decision logic on its own."""

    def err(self, status, retry_after=None, cls=ToolrunError):
        return cls("x", status=status, code="c", retry_after=retry_after)

    def test_which_failures_are_retried(self):
        for status in (408, 429, 500, 502, 503, 504):
            self.assertTrue(is_retryable("idempotent", self.err(status)), status)
        for status in (400, 401, 402, 403, 404, 409, 413, 422, 501):
            self.assertFalse(is_retryable("idempotent", self.err(status)), status)
        self.assertTrue(is_retryable("idempotent", self.err(0, cls=APIConnectionError)))
        self.assertTrue(is_retryable("idempotent", self.err(0, cls=APITimeoutError)))
        self.assertTrue(is_retryable("refused_only", self.err(429)))
        for status in (408, 500, 502, 503, 504):
            self.assertFalse(is_retryable("refused_only", self.err(status)), status)
        self.assertFalse(is_retryable("refused_only", self.err(0, cls=APIConnectionError)))
        refused = self.err(0, cls=APIConnectionError)
        refused.refused = True
        self.assertTrue(is_retryable("refused_only", refused))

    def test_delays(self):
        self.assertEqual(retry_delay(self.err(429, retry_after=3), 0, 0.5, 60), 3.0)
        self.assertIsNone(retry_delay(self.err(429, retry_after=61), 0, 0.5, 60))
        for n, (low, high) in enumerate([(0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (4.0, 8.0), (4.0, 8.0)]):
            for _ in range(20):
                d = retry_delay(self.err(503), n, 0.5, 60)
                self.assertTrue(low <= d <= high, (n, d))

    def test_retry_after_values(self):
        self.assertEqual(parse_retry_after("7"), 7.0)
        self.assertEqual(parse_retry_after(" 1.5 "), 1.5)
        self.assertIsNone(parse_retry_after(None))
        self.assertIsNone(parse_retry_after("soon"))
        self.assertIsNone(parse_retry_after("-3"))
        self.assertEqual(parse_retry_after("Thu, 01 Jan 2026 00:01:40 GMT", now=1767225600.0), 100.0)
        self.assertEqual(parse_retry_after("Thu, 01 Jan 2026 00:00:00 GMT", now=1767225700.0), 0.0)


if __name__ == "__main__":
    unittest.main()
