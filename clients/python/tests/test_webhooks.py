"""verify_webhook against signatures made here exactly as the service makes them."""

import hashlib
import hmac
import json
import unittest

import _support  # noqa: F401  (puts the package on the path)

import toolrun
from toolrun import ToolrunError, WebhookVerificationError, verify_webhook

SECRET = "whsec_test_3q2+7w=="
NOW = 1767225600  # 2026-01-01T00:00:00Z
BODY = json.dumps(
    {"id": "evt_1", "object": "event", "type": "run.succeeded", "created_at": "2026-01-01T00:00:00.000Z",
     "data": {"run": {"object": "run", "id": "r1", "status": "succeeded"}}},
    separators=(",", ":"),
).encode("utf-8")


def sign(body: bytes, t: int, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), ("%d." % t).encode() + body, hashlib.sha256).hexdigest()


class VerifyWebhook(unittest.TestCase):
    def reason(self, *args, **kwargs) -> str:
        with self.assertRaises(WebhookVerificationError) as caught:
            verify_webhook(*args, **kwargs)
        err = caught.exception
        self.assertIsInstance(err, ToolrunError)
        self.assertEqual(err.code, err.reason)
        return err.reason

    def test_valid(self):
        header = "t=%d,v1=%s" % (NOW, sign(BODY, NOW))
        event = verify_webhook(BODY, header, SECRET, now=NOW + 10)
        self.assertEqual((event["id"], event["type"]), ("evt_1", "run.succeeded"))
        self.assertEqual(event["data"]["run"]["id"], "r1")
        # The raw body as text, spaces around the items, upper-case hex and a header list work too.
        spaced = "t=%d, v1=%s" % (NOW, sign(BODY, NOW).upper())
        self.assertEqual(verify_webhook(BODY.decode(), spaced, SECRET, now=NOW)["id"], "evt_1")
        self.assertEqual(verify_webhook(BODY, ["t=%d" % NOW, "v1=" + sign(BODY, NOW)], SECRET, now=NOW)["id"], "evt_1")

    def test_tampered_body(self):
        header = "t=%d,v1=%s" % (NOW, sign(BODY, NOW))
        tampered = BODY.replace(b"succeeded", b"failed", 1)
        self.assertEqual(self.reason(tampered, header, SECRET, now=NOW), "signature_mismatch")
        # Parsed and serialized again is not the same bytes either.
        reserialized = json.dumps(json.loads(BODY)).encode()
        self.assertEqual(self.reason(reserialized, header, SECRET, now=NOW), "signature_mismatch")
        # Another endpoint's secret.
        self.assertEqual(self.reason(BODY, header, "whsec_other", now=NOW), "signature_mismatch")
        # The timestamp is signed: changing it breaks the signature.
        moved = "t=%d,v1=%s" % (NOW + 1, sign(BODY, NOW))
        self.assertEqual(self.reason(BODY, moved, SECRET, now=NOW), "signature_mismatch")

    def test_old_and_future_timestamps(self):
        old = NOW - 301
        self.assertEqual(self.reason(BODY, "t=%d,v1=%s" % (old, sign(BODY, old)), SECRET, now=NOW), "timestamp_too_old")
        # Inside the tolerance, and a tolerance of one's own.
        self.assertEqual(verify_webhook(BODY, "t=%d,v1=%s" % (NOW - 300, sign(BODY, NOW - 300)), SECRET, now=NOW)["id"], "evt_1")
        self.assertEqual(self.reason(BODY, "t=%d,v1=%s" % (NOW - 60, sign(BODY, NOW - 60)), SECRET, tolerance=30, now=NOW), "timestamp_too_old")
        future = NOW + 301
        self.assertEqual(self.reason(BODY, "t=%d,v1=%s" % (future, sign(BODY, future)), SECRET, now=NOW), "timestamp_in_future")

    def test_the_clock_is_used_by_default(self):
        header = "t=%d,v1=%s" % (NOW, sign(BODY, NOW))
        # 2026-01-01 is long past on any clock running this test... or not yet: either way, far away.
        self.assertIn(self.reason(BODY, header, SECRET, tolerance=1), ("timestamp_too_old", "timestamp_in_future"))

    def test_multiple_v1_values_one_matching(self):
        good = sign(BODY, NOW)
        old_secret = sign(BODY, NOW, "whsec_previous")
        for header in (
            "t=%d,v1=%s,v1=%s" % (NOW, good, old_secret),
            "t=%d,v1=%s,v1=%s" % (NOW, old_secret, good),
            "v1=%s,t=%d,v1=%s" % ("00" * 32, NOW, good),
            "t=%d,v1=short,v1=%s,v0=ignored" % (NOW, good),
        ):
            self.assertEqual(verify_webhook(BODY, header, SECRET, now=NOW)["id"], "evt_1", header)
        self.assertEqual(verify_webhook(BODY, "t=%d,v1=%s,v1=%s" % (NOW, good, old_secret), "whsec_previous", now=NOW)["id"], "evt_1")
        none_matching = "t=%d,v1=%s,v1=%s" % (NOW, old_secret, "ab" * 32)
        self.assertEqual(self.reason(BODY, none_matching, SECRET, now=NOW), "signature_mismatch")

    def test_malformed_headers(self):
        good = sign(BODY, NOW)
        self.assertEqual(self.reason(BODY, "", SECRET, now=NOW), "missing_signature")
        self.assertEqual(self.reason(BODY, None, SECRET, now=NOW), "missing_signature")
        self.assertEqual(self.reason(BODY, "v1=" + good, SECRET, now=NOW), "malformed_signature")
        self.assertEqual(self.reason(BODY, "t=%d,t=%d,v1=%s" % (NOW, NOW, good), SECRET, now=NOW), "malformed_signature")
        self.assertEqual(self.reason(BODY, "t=soon,v1=" + good, SECRET, now=NOW), "malformed_signature")
        self.assertEqual(self.reason(BODY, "t=%d" % NOW, SECRET, now=NOW), "malformed_signature")
        with self.assertRaises(ValueError):
            verify_webhook(BODY, "t=%d,v1=%s" % (NOW, good), "")

    def test_signed_but_not_an_event(self):
        for body in (b"not json", b"[1,2]", b'{"type":"ping"}'):
            self.assertEqual(self.reason(body, "t=%d,v1=%s" % (NOW, sign(body, NOW)), SECRET, now=NOW), "invalid_payload")
        ping = b'{"id":"evt_2","object":"event","type":"ping","created_at":"2026-01-01T00:00:00.000Z"}'
        self.assertEqual(verify_webhook(ping, "t=%d,v1=%s" % (NOW, sign(ping, NOW)), SECRET, now=NOW)["data"], {})

    def test_exported(self):
        self.assertIs(toolrun.verify_webhook, verify_webhook)


if __name__ == "__main__":
    unittest.main()
