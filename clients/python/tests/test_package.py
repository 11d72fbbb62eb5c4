"""The package itself: Python 3.9 syntax, standard library only, metadata in step with the code."""

import ast
import os
import sys
import unittest

import _support

import toolrun

PACKAGE_DIR = os.path.join(_support.PACKAGE_ROOT, "toolrun")
STDLIB = set(getattr(sys, "stdlib_module_names", ())) or None


def modules():
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith(".py"):
            path = os.path.join(PACKAGE_DIR, name)
            with open(path, encoding="utf-8") as f:
                yield path, f.read()


class Package(unittest.TestCase):
    def test_parses_as_python_3_9(self):
        for path, source in modules():
            tree = ast.parse(source, filename=path, feature_version=(3, 9))
            for node in ast.walk(tree):
                # X | Y between types is evaluated at run time in annotations on 3.9 only with
                # `from __future__ import annotations`; the package uses typing instead.
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                    self.fail("%s:%d uses |" % (path, node.lineno))

    @unittest.skipIf(STDLIB is None, "sys.stdlib_module_names needs Python 3.10")
    def test_imports_only_the_standard_library(self):
        for path, source in modules():
            for node in ast.walk(ast.parse(source)):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                for name in names:
                    self.assertIn(name.split(".")[0], STDLIB, "%s imports %s" % (path, name))

    def test_metadata(self):
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib needs Python 3.11")
        with open(os.path.join(_support.PACKAGE_ROOT, "pyproject.toml"), "rb") as f:
            meta = tomllib.load(f)
        project = meta["project"]
        self.assertEqual(project["name"], "toolrun")
        self.assertEqual(project["version"], toolrun.__version__)
        self.assertEqual(project["requires-python"], ">=3.9")
        self.assertEqual(project.get("dependencies", []), [])


if __name__ == "__main__":
    unittest.main()
