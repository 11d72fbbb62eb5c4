"""Event streams (runs.events, events.stream) and webhook endpoints, against a local HTTP server
over real sockets: the requests sent, the events parsed, reconnection with Last-Event-ID, and the
errors. The live server's side is in test/docs-operations.test.ts, which runs the reference's
Python samples."""

import json
import unittest

from _support import FakeServer, envelope

import toolrun
from toolrun.streams import parse_sse

RUN_ID = "5e1d7c3a-2b4f-4a6e-8c9d-0f1e2a3b4c5d"
EP_ID = "7f3e2d1c-0b9a-4877-a665-544332211009"


def run_json(status: str, progress: float = 0) -> dict:
    return {"object": "run", "id": RUN_ID, "tool_id": "image_upscale", "product_id": "image_upscale", "status": status,
            "progress": progress, "cost_sparks": 3, "outputs": [], "error": None, "api_key_id": "k",
            "created_at": None, "started_at": None, "finished_at": None}


def sse(*events: tuple) -> str:
    out = "retry: 2000\n\n: heartbeat\n\n"
    for event_id, name, data in events:
        out += "id: %s\nevent: %s\ndata: %s\n\n" % (event_id, name, json.dumps(data))
    return out


def client(server: FakeServer) -> toolrun.Toolrun:
    c = toolrun.Toolrun(api_key="svc_test_fake", base_url=server.url, backoff_base=0.001, timeout=10)
    c._http.sleep = lambda s: None  # reconnects at once
    return c


class ParseSse(unittest.TestCase):
    def test_fields_comments_multiline_data_and_crlf(self):
        lines = iter([b"\xef\xbb\xbf: hi\r\n", b"id: 7\n", b"event: status\n", b"data: a\n", b"data:b\n", b"\n",
                      b"data: no id\n", b"\n", b"event: dropped\n"])
        got = [(m.id, m.event, m.data) for m in parse_sse(lambda: next(lines, b""))]
        self.assertEqual(got, [("7", "status", "a\nb"), ("7", "message", "no id")])


class RunEvents(unittest.TestCase):
    def test_reads_until_done_and_reconnects_with_last_event_id(self):
        answers = [
            (200, {"Content-Type": "text/event-stream"}, sse(("2", "status", run_json("running")))),
            (200, {"Content-Type": "text/event-stream"}, sse(("3", "progress", run_json("running", 0.5)), ("4", "done", run_json("succeeded", 1)))),
        ]
        with FakeServer(lambda req, s: answers[min(len(s.requests), 2) - 1]) as server:
            opened = []
            events = list(client(server).runs.events(RUN_ID, on_open=lambda: opened.append(1)))
            self.assertEqual([(e.id, e.event, e.run.status) for e in events], [("2", "status", "running"), ("3", "progress", "running"), ("4", "done", "succeeded")])
            self.assertEqual(len(opened), 2)
            self.assertEqual([r.path for r in server.requests], ["/v1/runs/%s/events" % RUN_ID] * 2)
            self.assertEqual(server.requests[0].headers.get("accept"), "text/event-stream")
            self.assertNotIn("last-event-id", server.requests[0].headers)
            self.assertEqual(server.requests[1].headers.get("last-event-id"), "2")

    def test_204_ends_the_stream_and_errors_are_raised(self):
        with FakeServer(lambda req, s: (204, {}, b"")) as server:
            self.assertEqual(list(client(server).runs.events(RUN_ID, last_event_id="9")), [])
            self.assertEqual(server.requests[0].headers.get("last-event-id"), "9")
        with FakeServer(lambda req, s: (404, {}, envelope("run_not_found"))) as server:
            with self.assertRaises(toolrun.NotFoundError):
                list(client(server).runs.events(RUN_ID))
            self.assertEqual(server.count(), 1)


class TeamEvents(unittest.TestCase):
    def test_events_once_each_and_a_refused_resume_carries_on_from_now(self):
        event = {"id": "e1", "object": "event", "type": "run.canceled", "created_at": "2025-01-01T00:00:00.000Z", "data": {}}

        def handler(req, s):
            if len(s.requests) == 1:
                return 422, {}, envelope("invalid_request")
            return 200, {"Content-Type": "text/event-stream"}, sse(("e1", "run.canceled", event), ("e1", "run.canceled", event))

        with FakeServer(handler) as server:
            stream = client(server).events.stream(last_event_id="old")
            got = next(stream)
            stream.close()
            self.assertEqual((got.id, got.type, got.event["type"], json.loads(got.body)), ("e1", "run.canceled", "run.canceled", event))
            self.assertEqual(server.requests[0].headers.get("last-event-id"), "old")
            self.assertNotIn("last-event-id", server.requests[1].headers)


class Endpoints(unittest.TestCase):
    def test_paths_methods_and_bodies(self):
        with FakeServer(lambda req, s: (200, {}, {"object": "x"})) as server:
            eps = client(server).webhook_endpoints
            eps.list()
            eps.create("https://hooks.example.com/toolrun", ["run.succeeded"])
            eps.update(EP_ID, enabled=False)
            eps.delete(EP_ID)
            eps.test(EP_ID)
            eps.rotate_secret(EP_ID, expire_previous_in_seconds=0)
            eps.deliveries(EP_ID, limit=5, status="failed")
            eps.redeliver(EP_ID, "d1")
            base = "/v1/webhook-endpoints"
            self.assertEqual([(r.method, r.path) for r in server.requests], [
                ("GET", base),
                ("POST", base),
                ("PATCH", "%s/%s" % (base, EP_ID)),
                ("DELETE", "%s/%s" % (base, EP_ID)),
                ("POST", "%s/%s/test" % (base, EP_ID)),
                ("POST", "%s/%s/rotate-secret" % (base, EP_ID)),
                ("GET", "%s/%s/deliveries?limit=5&status=failed" % (base, EP_ID)),
                ("POST", "%s/%s/deliveries/d1/redeliver" % (base, EP_ID)),
            ])
            bodies = [r.json() if r.body else None for r in server.requests]
            self.assertEqual(bodies[1], {"url": "https://hooks.example.com/toolrun", "events": ["run.succeeded"]})
            self.assertEqual(bodies[2], {"enabled": False})
            self.assertEqual(bodies[5], {"expire_previous_in_seconds": 0})

    def test_a_500_on_create_is_not_retried(self):
        with FakeServer(lambda req, s: (500, {}, envelope("internal_error"))) as server:
            with self.assertRaises(toolrun.ServerError):
                client(server).webhook_endpoints.create("https://hooks.example.com/toolrun")
            self.assertEqual(server.count(), 1)


if __name__ == "__main__":
    unittest.main()
