"""The vector store: PostgreSQL with pgvector, one table per collection (docs/vectors.md).

A document's chunks reach the store as the diff against the store's OWN rows for that document
(not the Redis record, which expires): rows of chunks that are gone are deleted, new chunks
inserted, chunks whose text or metadata changed updated in place, the rest left alone. The diff
is applied in one transaction under a per-document advisory lock, so a reader sees the document
before or after, never half of it; a redelivered task finds its rows already there and writes
nothing; two workers on the same document apply one after the other.

A vector is reused when the row holding it was embedded by the same weights (their sha256) from
the same embedded text (its sha256). A chunk id alone is not enough: the breadcrumb in
``embed_text`` may change while the chunk's id, made from its content, does not.

Lost connections, restarts and other transient PostgreSQL errors are waited out with the Redis
store's policy (:func:`service.retry.call_with_retry`, ``LONGPARSER_STORE_RETRY_WINDOW``); each
phase is retried whole on a fresh connection, and the diff is recomputed under the lock, so a
transaction whose commit was lost with the connection is not applied twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from config.settings import VECTOR_COLLECTION_PATTERN, Settings, masked_url
from service.retry import Waits, call_with_retry

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_RETRY_WINDOW = Settings.model_fields["store_retry_window"].default
# hnsw.ef_search bounds what an unfiltered (approximate) search can return: at least k.
DEFAULT_EF_SEARCH = 40
CONNECT_TIMEOUT_S = 5


class VectorStoreError(RuntimeError):
    """The store refuses the document for good (retrying cannot help); the task records FAILURE."""


class DimensionMismatch(VectorStoreError):
    """The collection's table holds vectors of another dimension than the encoder's."""


class VectorStoreUnavailable(RuntimeError):
    """PostgreSQL stayed unreachable for the whole retry window; nothing of the document was
    written (the message is left for redelivery)."""


@dataclass(frozen=True)
class EncoderIdentity:
    """What made a vector: reuse needs the same weights; the table needs the same dimension."""

    name: str
    weights_sha256: str
    dimension: int
    normalized: bool


@dataclass(frozen=True)
class StoreOutcome:
    """What one ``embed_and_apply`` did: vectors computed or reused, rows written or kept."""

    embedded: int
    reused: int
    inserted: int
    updated: int
    deleted: int
    unchanged: int


def embedded_text(chunk: Mapping[str, Any]) -> str:
    """The text a chunk's vector is made from: its ``embed_text`` (heading context) when it has
    one, else its ``text``. The one definition the worker and the store share."""
    return chunk.get("embed_text") or chunk["text"]


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_metadata(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """The row's JSONB metadata, as JSON would give it back (so a comparison with the stored value
    is exact)."""
    metadata = {
        "pages": list(chunk.get("page_numbers") or []),
        "section_path": list(chunk.get("section_path") or []),
        "boxes": list(chunk.get("boxes") or []),
        "chunk_type": chunk.get("chunk_type"),
        "block_ids": list(chunk.get("block_ids") or []),
    }
    return json.loads(json.dumps(metadata))


def is_transient(exc: BaseException) -> bool:
    """Worth waiting out: the connection failed or was lost (restart, shutdown, network), the
    server is starting, or the transaction lost a serialization race or a deadlock (psycopg's
    TransactionRollback is an OperationalError)."""
    return isinstance(exc, psycopg.OperationalError)


@dataclass(frozen=True)
class _Row:
    """A row of the collection, as stored or as a chunk is to be written. Two rows are equal when
    nothing needs writing: the vector follows from the weights and the embedded text."""

    chunk_id: str
    text: str
    text_sha256: str
    weights_sha256: str
    metadata: dict[str, Any]
    embedding: np.ndarray = field(compare=False)


class VectorStore:
    """One collection of a PostgreSQL+pgvector database, over one connection (reopened after a
    failure). Not thread-safe: one per worker process."""

    def __init__(self, url: str, collection: str, *, retry_window: float = DEFAULT_RETRY_WINDOW,
                 waits: Waits | None = None):
        if not re.fullmatch(VECTOR_COLLECTION_PATTERN, collection):
            raise ValueError(f"vector collection {collection!r} must match {VECTOR_COLLECTION_PATTERN}")
        self.url = url
        self.collection = collection
        self.retry_window = retry_window
        self.waits = waits if waits is not None else Waits()
        self._table = sql.Identifier(collection)
        self._connection: psycopg.Connection | None = None
        self._dimension: int | None = None

    @classmethod
    def open(cls, url: str, collection: str, *, retry_window: float = DEFAULT_RETRY_WINDOW,
             waits: Waits | None = None) -> VectorStore:
        """A store on ``url`` (connected lazily, at first use)."""
        return cls(url, collection, retry_window=retry_window, waits=waits)

    # --- connection and retries ---------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        if self._connection is not None and not self._connection.closed and not self._connection.broken:
            return self._connection
        self.close()
        connection = psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
        try:
            if connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                with connection.transaction():  # two first workers at once: one creates, one waits
                    connection.execute(sql.SQL("SELECT pg_advisory_xact_lock({})").format(self._lock_key()))
                    connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _with_retry(self, what: str, call: Callable[[psycopg.Connection], T]) -> T:
        """``call(connection)``, retried whole on a fresh connection through transient errors."""

        def attempt() -> T:
            try:
                return call(self._connect())
            except BaseException as exc:
                if is_transient(exc):
                    self.close()
                raise

        try:
            return call_with_retry(attempt, window=self.retry_window, what=what, waits=self.waits,
                                   retry_on=is_transient, service="PostgreSQL")
        except Exception as exc:
            if is_transient(exc):
                raise VectorStoreUnavailable(
                    f"{what}: PostgreSQL at {masked_url(self.url)} unavailable for {self.retry_window:g} s "
                    f"({type(exc).__name__}: {exc})") from exc
            raise

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception as exc:  # closing a broken connection: nothing left to release
                logger.debug("closing the vector store connection: %s", exc)

    # --- the collection's table ---------------------------------------------------------------

    def _lock_key(self, *parts: str) -> sql.Composable:
        return sql.SQL("hashtextextended({}, 0)").format(sql.Literal("\x1f".join((self.collection, *parts))))

    def _table_dimension(self, connection: psycopg.Connection) -> int | None:
        row = connection.execute(
            "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) "
            "AND a.attname = 'embedding' AND NOT a.attisdropped", [self._qualified_name()]).fetchone()
        return None if row is None else int(row[0])

    def _qualified_name(self) -> str:
        return f'"{self.collection}"'

    def _ensure_table(self, connection: psycopg.Connection, dimension: int) -> None:
        """Create the collection's table and indexes when missing; refuse another dimension."""
        if self._dimension is None:
            found = self._table_dimension(connection)
            if found is None:
                with connection.transaction():
                    connection.execute(sql.SQL("SELECT pg_advisory_xact_lock({})").format(self._lock_key()))
                    connection.execute(self._schema(dimension))
                found = self._table_dimension(connection)
            self._dimension = found
        if self._dimension != dimension:
            raise DimensionMismatch(
                f"vector collection {self.collection!r} stores vectors of {self._dimension} dimensions; "
                f"the encoder gives {dimension}: use another LONGPARSER_VECTOR_COLLECTION for this encoder")

    def _schema(self, dimension: int) -> sql.Composable:
        return sql.SQL(
            "CREATE TABLE IF NOT EXISTS {table} ("
            " chunk_id text PRIMARY KEY,"
            " document_id text NOT NULL,"
            " text text NOT NULL,"
            " text_sha256 text NOT NULL,"
            " weights_sha256 text NOT NULL,"
            " encoder text NOT NULL,"
            " embedding vector({dimension}) NOT NULL,"
            " metadata jsonb NOT NULL);"
            " CREATE INDEX IF NOT EXISTS {document_index} ON {table} (document_id);"
            " CREATE INDEX IF NOT EXISTS {vector_index} ON {table} USING hnsw (embedding vector_cosine_ops)"
        ).format(table=self._table, dimension=sql.Literal(int(dimension)),
                 document_index=sql.Identifier(f"{self.collection[:50]}_document"),
                 vector_index=sql.Identifier(f"{self.collection[:50]}_hnsw"))

    def _rows(self, connection: psycopg.Connection, document_id: str) -> dict[str, _Row]:
        query = sql.SQL("SELECT chunk_id, text, text_sha256, weights_sha256, metadata, embedding "
                        "FROM {} WHERE document_id = %s").format(self._table)
        return {chunk_id: _Row(chunk_id, text, digest, weights, metadata, embedding.to_numpy())
                for chunk_id, text, digest, weights, metadata, embedding
                in connection.execute(query, [document_id]).fetchall()}

    # --- documents ----------------------------------------------------------------------------

    def embed_and_apply(
        self,
        document_id: str,
        chunks: list[dict],
        encoder: EncoderIdentity,
        embed: Callable[[list[str]], np.ndarray],
    ) -> StoreOutcome:
        """Reuse the vectors of unchanged embedded texts, ``embed`` the rest (once, in chunk
        order, texts without any prefix), set ``chunk["embedding"]`` (float32) on every chunk,
        then apply exactly the diff in one transaction.

        Raises:
            DimensionMismatch: the collection holds vectors of another dimension.
            VectorStoreUnavailable: PostgreSQL stayed away for the retry window (nothing written).
        """

        def stored_vectors(connection: psycopg.Connection) -> dict[str, np.ndarray]:
            self._ensure_table(connection, encoder.dimension)
            return {row.text_sha256: row.embedding for row in self._rows(connection, document_id).values()
                    if row.weights_sha256 == encoder.weights_sha256}

        reusable = self._with_retry(f"reading the vectors of {document_id}", stored_vectors)
        texts = [embedded_text(chunk) for chunk in chunks]
        digests = [text_sha256(text) for text in texts]
        missing = [index for index, digest in enumerate(digests) if digest not in reusable]
        computed = self._embed([texts[index] for index in missing], encoder, embed)
        vectors = {digests[index]: computed[position] for position, index in enumerate(missing)}
        for chunk, digest in zip(chunks, digests, strict=True):
            chunk["embedding"] = np.asarray(vectors.get(digest, reusable.get(digest)), dtype=np.float32)
        rows = [_Row(chunk["chunk_id"], chunk["text"], digest, encoder.weights_sha256, chunk_metadata(chunk),
                     chunk["embedding"])
                for chunk, digest in zip(chunks, digests, strict=True)]
        counts = self._with_retry(f"storing the vectors of {document_id}",
                                  lambda connection: self._apply(connection, document_id, rows, encoder))
        outcome = StoreOutcome(embedded=len(missing), reused=len(chunks) - len(missing), **counts)
        logger.info("document %s: vector collection %s: %s", document_id, self.collection, outcome)
        return outcome

    @staticmethod
    def _embed(texts: list[str], encoder: EncoderIdentity,
               embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        if not texts:
            return np.zeros((0, encoder.dimension), dtype=np.float32)
        vectors = np.asarray(embed(texts), dtype=np.float32)
        if vectors.shape != (len(texts), encoder.dimension):
            raise VectorStoreError(f"encoder {encoder.name!r} gave vectors of shape {vectors.shape} for "
                                   f"{len(texts)} texts; {encoder.dimension} dimensions declared")
        return vectors

    def _apply(self, connection: psycopg.Connection, document_id: str, rows: list[_Row],
               encoder: EncoderIdentity) -> dict[str, int]:
        """The diff against the rows as they are under the document's lock, in one transaction."""
        self._ensure_table(connection, encoder.dimension)
        with connection.transaction():
            lock = sql.SQL("SELECT pg_advisory_xact_lock({})").format(self._lock_key(document_id))
            connection.execute(lock)
            stored = self._rows(connection, document_id)
            wanted = {row.chunk_id: row for row in rows}
            removed = [chunk_id for chunk_id in stored if chunk_id not in wanted]
            added = [row for row in wanted.values() if row.chunk_id not in stored]
            changed = [row for row in wanted.values()
                       if row.chunk_id in stored and row != stored[row.chunk_id]]
            if removed:
                connection.execute(sql.SQL("DELETE FROM {} WHERE document_id = %s AND chunk_id = ANY(%s)")
                                   .format(self._table), [document_id, removed])
            cursor = connection.cursor()
            if added:
                cursor.executemany(
                    sql.SQL("INSERT INTO {} (chunk_id, document_id, text, text_sha256, weights_sha256, "
                            "encoder, embedding, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                            ).format(self._table),
                    [(row.chunk_id, document_id, row.text, row.text_sha256, encoder.weights_sha256,
                      encoder.name, row.embedding, Jsonb(row.metadata)) for row in added])
            if changed:
                cursor.executemany(
                    sql.SQL("UPDATE {} SET text = %s, text_sha256 = %s, weights_sha256 = %s, encoder = %s, "
                            "embedding = %s, metadata = %s WHERE chunk_id = %s").format(self._table),
                    [(row.text, row.text_sha256, encoder.weights_sha256, encoder.name, row.embedding,
                      Jsonb(row.metadata), row.chunk_id) for row in changed])
        return {"inserted": len(added), "updated": len(changed), "deleted": len(removed),
                "unchanged": len(wanted) - len(added) - len(changed)}

    # --- search -------------------------------------------------------------------------------

    def search(self, query_vector: Any, k: int, document_id: str | None = None) -> list[dict]:
        """The ``k`` rows nearest ``query_vector`` by cosine distance, best first.

        Filtered by document, the scan is exact (index scans off: the HNSW index would return its
        approximate neighbours and then filter them); over the whole collection it is the HNSW
        index's approximate search, with ``hnsw.ef_search`` at least ``k``.
        """
        vector = np.asarray(query_vector, dtype=np.float32).ravel()
        # Ties broken by chunk id where the scan is exact; the HNSW index orders by distance alone.
        where, order = ((sql.SQL("WHERE document_id = %(document)s"), sql.SQL(", chunk_id"))
                        if document_id is not None else (sql.SQL(""), sql.SQL("")))
        query = sql.SQL(
            "SELECT chunk_id, document_id, text, metadata, 1 - (embedding <=> %(query)s) AS score "
            "FROM {table} {where} ORDER BY embedding <=> %(query)s{order} LIMIT %(k)s"
        ).format(table=self._table, where=where, order=order)

        def run(connection: psycopg.Connection) -> list[tuple]:
            if self._table_dimension(connection) is None:
                return []
            with connection.transaction():
                if document_id is not None:
                    connection.execute("SET LOCAL enable_indexscan = off")
                else:
                    connection.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                        sql.Literal(max(DEFAULT_EF_SEARCH, int(k)))))
                parameters = {"query": vector, "document": document_id, "k": int(k)}
                return connection.execute(query, parameters).fetchall()

        rows = self._with_retry("searching the vector store", run)
        return [{"chunk_id": chunk_id, "document_id": document, "text": text, "score": float(score),
                 "page_numbers": metadata.get("pages", []), "section_path": metadata.get("section_path", []),
                 "chunk_type": metadata.get("chunk_type")}
                for chunk_id, document, text, metadata, score in rows]

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
