"""Against a live server: TOOLRUN_BASE_URL and TOOLRUN_API_KEY name it and a key with the read and
run scopes on a paid plan with Sparks to spend (test/python-client.test.ts starts one and runs
this suite). Skipped when they are not set."""

import io
import os
import pathlib
import shutil
import tempfile
import unittest
import uuid

from _support import make_png, png_size

import toolrun

LIVE = bool(os.environ.get("TOOLRUN_BASE_URL") and os.environ.get("TOOLRUN_API_KEY"))
UNKNOWN_RUN = "00000000-0000-4000-8000-000000000000"


@unittest.skipUnless(LIVE, "set TOOLRUN_BASE_URL and TOOLRUN_API_KEY to run against a live server")
class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = toolrun.Toolrun(timeout=30)
        cls.tmp = tempfile.mkdtemp(prefix="toolrun-python-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_me_and_tools(self):
        me = self.client.me()
        self.assertEqual(me["object"], "me")
        self.assertTrue(os.environ["TOOLRUN_API_KEY"].startswith("svc_test_" + me["api_key"]["prefix"]))
        self.assertIn("run", me["api_key"]["scopes"])
        self.assertIsInstance(me["sparks_available"], int)
        ids = [t["id"] for t in self.client.tools.list()]
        self.assertIn("image_upscale", ids)
        tool = self.client.tools.get("image_upscale")
        self.assertEqual([i["name"] for i in tool["inputs"]], ["image", "method", "scale"])
        with self.assertRaises(toolrun.NotFoundError) as caught:
            self.client.tools.get("no_such_tool")
        self.assertEqual(caught.exception.code, "tool_not_found")

    def test_happy_path(self):
        png = make_png(48, 32)
        path = os.path.join(self.tmp, "photo.png")
        with open(path, "wb") as f:
            f.write(png)
        file = self.client.files.upload(path)
        self.assertIsInstance(file, toolrun.File)
        self.assertEqual(file.status, "ready", file.problem)

        inputs = {"image": [file.id]}
        estimate = self.client.estimate("image_upscale", inputs)
        self.assertIsInstance(estimate, toolrun.Estimate)
        self.assertEqual((estimate.tool_id, estimate.raw["object"]), ("image_upscale", "estimate"))
        self.assertGreater(estimate.sparks, 0)
        before = self.client.me()["sparks_available"]

        key = "python-" + str(uuid.uuid4())
        started = self.client.runs.start("image_upscale", inputs, idempotency_key=key)
        self.assertIsInstance(started, toolrun.Run)
        self.assertEqual(started.cost_sparks, estimate.reserve_sparks)
        # The same key again: the run already started, not a second one.
        self.assertEqual(self.client.runs.start("image_upscale", inputs, idempotency_key=key).id, started.id)

        seen = []
        done = self.client.runs.wait(started, timeout=45, on_progress=seen.append)
        self.assertEqual(done.status, "succeeded", done.error)
        self.assertTrue(done.is_final)
        self.assertEqual(seen[-1].status, "succeeded")
        self.assertEqual(done.cost_sparks, estimate.sparks)
        self.assertEqual(self.client.me()["sparks_available"], before - done.cost_sparks)
        self.assertEqual(self.client.runs.get(done.id).outputs, done.outputs)

        [output] = done.outputs
        self.assertEqual((output.mime_type, output.width, output.height), ("image/png", 96, 64))
        paths = self.client.outputs.download(done, os.path.join(self.tmp, "out"))
        self.assertEqual(len(paths), 1)
        self.assertEqual(os.path.dirname(paths[0]), os.path.join(self.tmp, "out"))
        self.assertEqual(os.path.basename(paths[0]), output.file_name)
        with open(paths[0], "rb") as f:
            data = f.read()
        self.assertEqual(len(data), output.size_bytes)
        self.assertEqual(png_size(data), (96, 64))
        self.assertEqual([n for n in os.listdir(os.path.join(self.tmp, "out")) if n.endswith(".part")], [])

        # A finished run cannot be canceled.
        with self.assertRaises(toolrun.ConflictError) as caught:
            self.client.runs.cancel(done)
        self.assertEqual((caught.exception.status, caught.exception.code), (409, "run_not_cancelable"))

        page = self.client.runs.list(limit=1, tool_id="image_upscale", status="succeeded")
        self.assertEqual(len(page.data), 1)
        self.assertEqual(page.data[0].tool_id, "image_upscale")
        self.assertIn(done.id, [r.id for r in self.client.runs.iter(tool_id="image_upscale", limit=1)])

    def test_one_call_run_uploads_local_inputs(self):
        path = pathlib.Path(self.tmp) / "small.png"
        path.write_bytes(make_png(20, 10))
        dest = os.path.join(self.tmp, "one-call")
        run = self.client.run("image_upscale", {"image": path}, download=dest, timeout=45)
        self.assertEqual(run.status, "succeeded")
        self.assertEqual(run.downloaded, [os.path.join(dest, "small-upscaled.png")])
        with open(run.downloaded[0], "rb") as f:
            self.assertEqual(png_size(f.read()), (40, 20))
        # A path as a str in a media slot, bytes, and a file object are uploaded too.
        str_path = self.client.run("image_upscale", {"image": str(path)}, timeout=45)
        self.assertEqual((str_path.status, str_path.outputs[0].width), ("succeeded", 40))
        from_bytes = self.client.run("image_upscale", {"image": [make_png(8, 8)]}, timeout=45)
        self.assertEqual(from_bytes.outputs[0].width, 16)
        from_file = self.client.run("image_upscale", {"image": io.BytesIO(make_png(9, 9))}, timeout=45)
        self.assertEqual(from_file.outputs[0].width, 18)

    def test_upload_sources(self):
        with open(os.path.join(self.tmp, "named.png"), "wb") as f:
            f.write(make_png(12, 12))
        with open(os.path.join(self.tmp, "named.png"), "rb") as f:
            self.assertEqual(self.client.files.upload(f).status, "ready")
        # Not a media file: stored and completed, then rejected with the reason. 2.5 MiB goes in
        # several parts when the server's part size is 1 MiB (as the Node test sets it).
        noise = os.urandom(5 * 512 * 1024)
        progress = []
        file = self.client.files.upload(noise, file_name="noise.bin", on_progress=progress.append)
        self.assertEqual(file.status, "rejected")
        self.assertTrue(file.problem)
        self.assertEqual(progress[-1].uploaded_bytes, len(noise))
        self.assertEqual(progress[-1].parts_done, progress[-1].parts_total)
        with self.assertRaises(toolrun.ToolrunError) as caught:
            self.client.files.upload(b"")
        self.assertEqual(caught.exception.code, "empty_file")

    def test_bad_keys(self):
        base = os.environ["TOOLRUN_BASE_URL"]
        with self.assertRaises(toolrun.AuthenticationError) as caught:
            toolrun.Toolrun(api_key="svc_test_" + "A" * 40, base_url=base).me()
        err = caught.exception
        self.assertEqual((err.status, err.code), (401, "invalid_api_key"))
        self.assertTrue(err.request_id)
        self.assertTrue(err.message)
        with self.assertRaises(toolrun.AuthenticationError) as caught:
            toolrun.Toolrun(api_key="not-a-key", base_url=base).tools.list()
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "api_key_required"))

    def test_bad_input(self):
        with self.assertRaises(toolrun.InvalidRequestError) as caught:
            self.client.runs.start("image_upscale", {})
        err = caught.exception
        self.assertEqual((err.status, err.code), (422, "invalid_request"))
        self.assertEqual(err.errors[0]["loc"], ["body", "inputs", "image"])
        self.assertEqual(err.errors[0]["code"], "missing")
        with self.assertRaises(toolrun.InvalidRequestError) as caught:
            self.client.estimate("image_upscale", {"image": ["f"], "sharpen": 4})
        locs = [(e["loc"], e["code"]) for e in caught.exception.errors]
        self.assertIn((["body", "inputs", "sharpen"], "unknown_slot"), locs)

    def test_unknown_things(self):
        with self.assertRaises(toolrun.NotFoundError) as caught:
            self.client.runs.get(UNKNOWN_RUN)
        err = caught.exception
        self.assertEqual((err.status, err.code), (404, "run_not_found"))
        self.assertTrue(err.request_id)
        with self.assertRaises(toolrun.NotFoundError) as caught:
            self.client.estimate("no_such_tool", {})
        self.assertEqual(caught.exception.code, "tool_not_found")
        with self.assertRaises(toolrun.InvalidRequestError) as caught:
            self.client.runs.get("not-a-uuid")
        self.assertEqual(caught.exception.errors[0]["loc"], ["path", "run_id"])


if __name__ == "__main__":
    unittest.main()
