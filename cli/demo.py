"""``make run``: start a worker, submit the sample document, print its chunks, stop the worker.

    python -m cli.demo [--backend auto|redis|embedded] [--input FILE] [--timeout S]

Backend choice (``auto``): the Redis at ``LONGPARSER_BROKER_URL`` when it answers PING within
0.5 s, else an embedded Redis-protocol server (``fakeredis.TcpFakeServer``) on a free loopback
port inside this process, so nothing has to be installed. The embedded server rather than
kombu's filesystem transport: it runs the very same Redis transport, result backend and
result-store code as production, redelivery after a killed child included.

The demo uses a private queue ``demo-<id>`` so it never takes work from, or gives work to, a
real fleet on the same Redis. The worker it starts is always stopped (SIGTERM to its process
group, SIGKILL after a grace period), on success, failure or Ctrl-C. Its log is kept, and its
path printed, only when the demo fails; after a success it is deleted.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from kombu.utils.url import maybe_sanitize_url

from config.settings import Settings, SettingsError, get_settings
from service.keys import kombu_queue_keys

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INPUT = ROOT / "examples" / "sample_document.json"
LOG_DIR = ROOT / "var"
STOP_GRACE_S = 10.0
# The embedded fakeredis server drops a worker's connection on task messages of a few MB (real
# Redis carries the full 16 MiB default). On the embedded backend the demo caps the payload size
# well below that, so an oversized input is refused up front with a clear PayloadTooLarge
# instead of a task that silently never runs.
EMBEDDED_MAX_PAYLOAD_BYTES = 2 * 1024 * 1024


def redis_answers(url: str, timeout: float = 0.5) -> bool:
    """True when a Redis server answers PING at ``url`` within ``timeout`` seconds."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.exceptions.RedisError, OSError, ValueError):
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def embedded_redis() -> Iterator[str]:
    """Serve the Redis protocol from this process (fakeredis) and yield its URL."""
    from fakeredis import TcpFakeServer

    port = _free_port()
    server = TcpFakeServer(("127.0.0.1", port), server_type="redis")
    # Invariant: closing must not wait for client connections still open in other processes.
    server.daemon_threads = True
    server.block_on_close = False
    thread = threading.Thread(target=server.serve_forever, name="embedded-redis", daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def backend(choice: str, settings: Settings) -> Iterator[tuple[str, str, int]]:
    """Yield ``(url, description, max_payload_bytes)`` of the broker/store the demo runs on."""
    if choice == "redis" or (choice == "auto" and redis_answers(settings.broker_url)):
        yield (settings.broker_url, f"redis at {maybe_sanitize_url(settings.broker_url)}",
               settings.max_payload_bytes)
        return
    reason = "" if choice == "embedded" else f" (none answered at {maybe_sanitize_url(settings.broker_url)})"
    limit = min(settings.max_payload_bytes, EMBEDDED_MAX_PAYLOAD_BYTES)
    with embedded_redis() as url:
        yield (url, f"embedded fakeredis TCP server at {url}, payloads up to {limit // 1024} KiB"
               f"{reason}; nothing to install", limit)


def worker_command(queue: str, node: str) -> list[str]:
    """The command line of the demo's structural worker (one prefork child)."""
    return [sys.executable, "-m", "celery", "-A", "worker", "worker", "-Q", queue, "-c", "1",
            "-n", f"{node}@%h", "--without-gossip", "--without-mingle", "-l", "WARNING"]


def demo_environment(url: str, queue: str, max_payload_bytes: int) -> dict[str, str]:
    """The worker's environment: this demo's broker/store, private queue, structural only."""
    return {**os.environ, "LONGPARSER_BROKER_URL": url, "LONGPARSER_RESULT_URL": url,
            "LONGPARSER_STRUCTURAL_QUEUE": queue, "LONGPARSER_WORKER_QUEUES": queue,
            "LONGPARSER_SEMANTIC_ENABLED": "false", "LONGPARSER_CONCURRENCY": "1",
            "LONGPARSER_MAX_PAYLOAD_BYTES": str(max_payload_bytes)}


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    """Warm-stop the worker's process group; kill it if it overstays the grace period."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def running_worker(settings: Settings, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start the demo worker in its own session (so its whole group can be stopped)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    queue = settings.structural_queue
    env = demo_environment(settings.broker_url, queue, settings.max_payload_bytes)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(worker_command(queue, queue), cwd=ROOT, env=env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        stop_worker(process)


def forget_queue(settings: Settings, queue: str) -> None:
    """Delete the demo's private queue keys (never anything shared) from the broker."""
    client = redis.Redis.from_url(settings.broker_url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.delete(*kombu_queue_keys(settings.celery_key_prefix, queue))
    except redis.exceptions.RedisError:
        pass  # best effort: leftovers are empty sets/lists named demo-<id>
    finally:
        client.close()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no worker log)"


def wait_for_result(handle: object, process: subprocess.Popen[bytes], timeout: float, producer: Any):
    """Poll for the result, failing fast if the worker process dies while we wait."""
    from tasks.errors import ResultTimeout

    deadline = time.monotonic() + timeout
    while True:
        try:
            return producer.get_result(handle, timeout=min(1.0, max(0.0, deadline - time.monotonic())))
        except ResultTimeout:
            if process.poll() is not None:
                raise RuntimeError(f"the worker exited with status {process.returncode}") from None
            if time.monotonic() >= deadline:
                raise


def _submit_and_wait(request: object, settings: Settings, timeout: float) -> object:
    """Run the worker, submit, wait; the worker is stopped and the private queue deleted after."""
    from tasks.client import Producer

    queue = settings.structural_queue
    log_path = LOG_DIR / f"{queue}-worker.log"
    try:
        with running_worker(settings, log_path) as process, Producer(settings) as producer:
            print(f"worker: started (pid {process.pid}, queue {queue})", flush=True)
            handle = producer.submit(request)
            print(f"submitted: document {handle.document_id} (task {handle.task_id})", flush=True)
            try:
                return wait_for_result(handle, process, timeout, producer)
            except Exception as exc:
                raise RuntimeError(f"{type(exc).__name__}: {exc}\n--- worker log tail (whole log kept: "
                                   f"{log_path}) ---\n{_tail(log_path)}") from exc
    finally:
        forget_queue(settings, queue)


def run_demo(choice: str, input_path: Path, timeout: float) -> int:
    """Run the whole demo; returns the exit status (0 ok, 1 failed, 2 bad input)."""
    from cli.chunk import format_summary, load_request, missing_default_word_list
    from schemas import InputError

    try:
        settings = get_settings()
    except SettingsError as exc:
        print(f"make run: error: settings (LONGPARSER_* environment / .env): {exc}", file=sys.stderr)
        return 2
    try:
        request = load_request(argparse.Namespace(input=str(input_path), config=None, semantic=False))
    except InputError as exc:
        print(f"make run: error: {exc}", file=sys.stderr)
        return 2
    queue = f"demo-{uuid.uuid4().hex[:8]}"
    with backend(choice, settings) as (url, description, max_payload_bytes):
        print(f"backend: {description}", flush=True)
        demo_settings = settings.model_copy(update={
            "broker_url": url, "result_url": url, "structural_queue": queue, "worker_queues": queue,
            "semantic_enabled": False, "max_payload_bytes": max_payload_bytes})
        started = time.perf_counter()
        try:
            result = _submit_and_wait(request, demo_settings, timeout)
        except Exception as exc:
            print(f"make run: failed: {exc}", file=sys.stderr)
            return 1
        (LOG_DIR / f"{queue}-worker.log").unlink(missing_ok=True)
        print(f"result: stored and fetched in {time.perf_counter() - started:.1f} s; worker stopped")
        print(f"the command: {command_hint()}\n")
        # the worker read the same settings: its scores lack what `chunk --summary`'s lack
        print(format_summary(result, missing_default_word_list(settings)), end="")
    return 0


def command_hint() -> str:
    """How to run ``longparser`` from here: it is installed in this interpreter's venv, not on PATH."""
    bin_dir = Path(sys.executable).parent
    if bin_dir.is_relative_to(Path.cwd()):
        bin_dir = Path(os.path.relpath(bin_dir))
    return (f"{bin_dir / 'longparser'} chunk {os.path.relpath(DEFAULT_INPUT)} --summary "
            f"(or `. {bin_dir / 'activate'}`, then longparser ...)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("auto", "redis", "embedded"), default="auto")
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    from config.logging import configure_logging

    configure_logging("WARNING")
    return run_demo(args.backend, args.input, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
