#!/usr/bin/env python3
"""docling's own conversion of the set's Markdown documents (what the DoclingDocument anchors chunk).

Run once, when the set was built, in a throwaway environment (docling is no project dependency):

    python -m venv /tmp/docling-md && /tmp/docling-md/bin/pip install docling-core==2.104.0 marko \\
        beautifulsoup4 pillow pydantic-settings filetype lxml requests tqdm pluggy
    /tmp/docling-md/bin/pip install --no-deps docling==2.121.0 docling-slim==2.121.0
    /tmp/docling-md/bin/python eval/retrieval_v2/convert_markdown.py

Writes ``documents/NAME.md.json`` beside each ``documents/NAME.md`` (docling's
``MarkdownDocumentBackend``, its defaults; ``export_to_dict()``, indented by 2). The blob ids of
the results are in ``documents/manifest.json``; the project's own rows read the ``.md`` file
through ``loaders.markdown`` instead.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOCUMENTS = Path(__file__).resolve().parent / "documents"
MARKDOWN = ("model_catalog.md", "compatibility.md")


def main() -> int:
    from docling.backend.md_backend import MarkdownDocumentBackend
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    for name in MARKDOWN:
        source = InputDocument(path_or_stream=DOCUMENTS / name, format=InputFormat.MD,
                               backend=MarkdownDocumentBackend)
        doc = source._backend.convert()
        text = json.dumps(doc.export_to_dict(), ensure_ascii=False, indent=2)
        (DOCUMENTS / f"{name}.json").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
