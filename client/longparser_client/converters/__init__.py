"""Converters a producer passes to the client (``text_converter=``, ``docling=``): other formats
turned into block dicts in the wire shape, on the producer's side.

* :mod:`~longparser_client.converters.markdown`: Markdown (``blocks_from_markdown``, needs
  ``pip install 'longparser-client[markdown]'``) and plain text (``blocks_from_text``, no extra).
* :mod:`~longparser_client.converters.docling`: docling's DoclingDocument
  (``blocks_from_docling``, needs ``pip install 'longparser-client[docling]'``).

Nothing is imported here, so importing one converter loads neither the other nor its parser.
"""
