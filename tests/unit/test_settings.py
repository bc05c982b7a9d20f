"""Settings (env parsing, cache, validation), the Celery configuration built from them, and
``config/.env.example`` staying in step with both."""

from __future__ import annotations

import os
import re
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings, SettingsError, get_settings, masked_url
from service.celeryconfig import celery_config

ENV_EXAMPLE = Path(__file__).resolve().parents[2] / "config" / ".env.example"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No LONGPARSER_* variable from the caller's shell (nor a .env), and a fresh settings cache."""
    for name in list(os.environ):
        if name.startswith("LONGPARSER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_defaults_match_the_spec() -> None:
    settings = Settings()
    assert settings.broker_url == settings.result_url == "redis://127.0.0.1:6379/0"
    assert (settings.structural_queue, settings.semantic_queue) == ("chunking", "semantic")
    assert settings.torch_threads == 1
    assert settings.word_list_path == "/usr/share/dict/words"
    assert settings.model_path is None
    assert settings.semantic_enabled is False
    assert settings.consumed_queues() == ("chunking",)


def test_env_is_parsed_and_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGPARSER_CONCURRENCY", "4")
    monkeypatch.setenv("LONGPARSER_SEMANTIC_ENABLED", "true")
    monkeypatch.setenv("LONGPARSER_WORD_LIST_PATH", "")
    monkeypatch.setenv("LONGPARSER_LOG_LEVEL", "debug")
    monkeypatch.setenv("LONGPARSER_BROKER_URL", "rediss://:s3cret@cache.example:6380/2")
    settings = get_settings()
    assert settings.concurrency == 4
    assert settings.semantic_enabled is True
    assert settings.word_list_path is None
    assert settings.log_level == "DEBUG"
    assert settings.broker_url == "rediss://:s3cret@cache.example:6380/2"
    assert settings.consumed_queues() == ("chunking", "semantic")


def test_get_settings_is_cached_until_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    first = get_settings()
    monkeypatch.setenv("LONGPARSER_CONCURRENCY", "7")
    assert get_settings() is first
    assert get_settings().concurrency == 2
    get_settings.cache_clear()
    assert get_settings().concurrency == 7


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"LONGPARSER_SOFT_TIME_LIMIT": "400"}, "soft_time_limit (400) must be below hard_time_limit"),
        ({"LONGPARSER_HARD_TIME_LIMIT": "2000", "LONGPARSER_LEASE_INTERVAL": "0"},
         "at most half the Redis visibility_timeout (3600)"),
        ({"LONGPARSER_LEASE_INTERVAL": "30"}, "lease_timeout (60) must be at least 3 lease_interval (30)"),
        ({"LONGPARSER_LEASE_INTERVAL": "-1"}, "lease_interval (LONGPARSER_LEASE_INTERVAL='-1'): Input"),
        ({"LONGPARSER_SEMANTIC_QUEUE": "chunking"}, "must differ"),
        ({"LONGPARSER_KEY_PREFIX": "bad prefix"}, "key_prefix (LONGPARSER_KEY_PREFIX='bad prefix'): String"),
        ({"LONGPARSER_LOG_LEVEL": "LOUD"}, "log_level (LONGPARSER_LOG_LEVEL='LOUD'): Input should be"),
        ({"LONGPARSER_BROKER_URL": "sentinel://127.0.0.1:26379"}, "need LONGPARSER_SENTINEL_MASTER"),
    ],
)
def test_invalid_settings_are_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], fragment: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as caught:
        get_settings()
    message = str(caught.value)
    assert fragment in message
    assert "\n" not in message and "Value error" not in message


def test_two_bad_variables_are_both_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGPARSER_CONCURRENCY", "0")
    monkeypatch.setenv("LONGPARSER_SEMANTIC_ENABLED", "maybe")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    assert str(caught.value) == (
        "concurrency (LONGPARSER_CONCURRENCY='0'): Input should be greater than or equal to 1; "
        "semantic_enabled (LONGPARSER_SEMANTIC_ENABLED='maybe'): Input should be a valid boolean, unable to "
        "interpret input")


def test_dot_env_is_read_and_the_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LONGPARSER_CONCURRENCY=5\nLONGPARSER_KEY_PREFIX=from-file\n"
                                   "FLOWER_BASIC_AUTH=a:b\n")
    monkeypatch.setenv("LONGPARSER_KEY_PREFIX", "from-env")
    settings = get_settings()
    assert (settings.concurrency, settings.key_prefix) == (5, "from-env")
    assert settings.explicitly_set("concurrency") and not settings.explicitly_set("language_id")


@pytest.mark.parametrize(
    ("worker_queues", "semantic", "expected"),
    [
        ("", False, ("chunking",)),
        ("", True, ("chunking", "semantic")),
        ("semantic", False, ("semantic",)),
        (" chunking , semantic ,", False, ("chunking", "semantic")),
    ],
)
def test_consumed_queues(worker_queues: str, semantic: bool, expected: tuple[str, ...]) -> None:
    settings = Settings(worker_queues=worker_queues, semantic_enabled=semantic)
    assert settings.consumed_queues() == expected


def test_celery_config_is_json_only_and_safe() -> None:
    config = celery_config(Settings())
    assert config["accept_content"] == ["json"]
    assert config["result_accept_content"] == ["json"]
    assert config["task_serializer"] == config["result_serializer"] == config["event_serializer"] == "json"
    assert "pickle" not in repr(config)
    assert config["task_acks_late"] is True
    assert config["task_reject_on_worker_lost"] is True
    assert config["worker_prefetch_multiplier"] == 1
    assert config["broker_connection_max_retries"] is None  # a worker never gives up on its broker
    assert config["result_backend_always_retry"] is True
    assert config["worker_send_task_events"] is True
    assert config["task_send_sent_event"] is True
    assert config["broker_connection_retry_on_startup"] is True
    assert config["worker_proc_alive_timeout"] == 60
    assert config["task_soft_time_limit"] < config["task_time_limit"]
    visibility = config["broker_transport_options"]["visibility_timeout"]
    # the lease (on by default): renewed every 10 s, put back after 60 s, swept every 10 s
    assert config["result_backend_transport_options"]["visibility_timeout"] == visibility == 60
    assert {key: config["broker_transport_options"][key] for key in (
        "unacked_restore_interval", "unacked_restore_throttle", "unacked_mutex_expire")} == {
        "unacked_restore_interval": 10, "unacked_restore_throttle": 1, "unacked_mutex_expire": 10}
    assert [queue.name for queue in config["task_queues"]] == ["chunking"]
    assert "broker_use_ssl" not in config
    assert "global_keyprefix" not in config["broker_transport_options"]


def test_without_the_lease_the_visibility_timeout_outlasts_the_hard_time_limit() -> None:
    config = celery_config(Settings(lease_interval=0))
    options = config["broker_transport_options"]
    assert options["visibility_timeout"] == 3600 and config["task_time_limit"] * 2 <= 3600
    assert not {"unacked_restore_interval", "unacked_restore_throttle", "unacked_mutex_expire"} & set(options)


def test_with_the_lease_the_hard_time_limit_no_longer_bounds_the_visibility_timeout() -> None:
    settings = Settings(hard_time_limit=7200, soft_time_limit=7000, lease_interval=2, lease_timeout=6)
    options = celery_config(settings)["broker_transport_options"]
    assert options["visibility_timeout"] == settings.effective_visibility_timeout == 6
    assert options["unacked_restore_interval"] == 2 and options["unacked_mutex_expire"] == 2
    assert celery_config(Settings(lease_interval=0.5, lease_timeout=2))["broker_transport_options"][
        "unacked_mutex_expire"] == 1  # a lock of at least a second


def test_celery_config_tls_password_and_key_prefix() -> None:
    url = "rediss://:p%40ss@redis.internal:6380/3"
    config = celery_config(Settings(broker_url=url, result_url=url, redis_ssl_cert_reqs="optional",
                                    celery_key_prefix="lptest-1:"))
    assert config["broker_url"] == config["result_backend"] == url
    assert config["broker_use_ssl"] == {"ssl_cert_reqs": ssl.CERT_OPTIONAL}
    assert config["redis_backend_use_ssl"] == {"ssl_cert_reqs": ssl.CERT_OPTIONAL}
    assert config["broker_transport_options"]["global_keyprefix"] == "lptest-1:"
    assert config["result_backend_transport_options"]["global_keyprefix"] == "lptest-1:"


@pytest.mark.parametrize(
    ("request_config", "queue"),
    [({}, "chunking"), ({"use_semantic_chunking": True}, "semantic"), (None, "chunking")],
)
def test_router_sends_direct_calls_to_the_queue_the_request_asks_for(
    request_config: dict | None, queue: str
) -> None:
    from celery import Celery

    app = Celery("router-test", set_as_current=False)
    app.conf.update(celery_config(Settings()))
    request = {"document_id": "d", "blocks": [], "config": request_config}
    router = app.amqp.router
    assert router.route({}, "longparser.chunk_document", args=[request], kwargs={})["queue"].name == queue
    explicit = router.route({"queue": "custom"}, "longparser.chunk_document", args=[request], kwargs={})
    assert explicit["queue"].name == "custom"


def test_sentinel_urls_carry_the_master_name_everywhere() -> None:
    url = "sentinel://:pw@10.0.0.1:26379/0;sentinel://:pw@10.0.0.2:26379/0"
    config = celery_config(Settings(broker_url=url, result_url=url, sentinel_master="lp-master"))
    for options in (config["broker_transport_options"], config["result_backend_transport_options"]):
        assert options["master_name"] == "lp-master"
        assert options["visibility_timeout"] == 60
    assert config["broker_url"] == config["result_backend"] == url
    assert "broker_use_ssl" not in config
    tls = celery_config(Settings(broker_url=url, result_url=url, sentinel_master="m", sentinel_tls=True))
    assert tls["broker_use_ssl"] == tls["redis_backend_use_ssl"] == {"ssl_cert_reqs": ssl.CERT_REQUIRED}


def test_sentinel_store_client_finds_the_master_by_name() -> None:
    from redis.sentinel import SentinelConnectionPool

    from service.redis_client import redis_client, sentinel_hosts

    url = "sentinel://:p%40ss@10.0.0.1:26379/3;sentinel://10.0.0.2:26380"
    assert sentinel_hosts(url) == ([("10.0.0.1", 26379), ("10.0.0.2", 26380)], "p@ss", 3)
    client = redis_client(url, Settings(broker_url=url, result_url=url, sentinel_master="lp-master"))
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "lp-master"
    assert pool.connection_kwargs["password"] == "p@ss"
    assert pool.connection_kwargs["db"] == 3
    assert masked_url(url) == "sentinel://:**@10.0.0.1:26379/3;sentinel://10.0.0.2:26380"
    assert masked_url("redis://u:pw@h/1?password=pw&db=2") == "redis://u:**@h/1?password=**&db=2"


def test_worker_app_carries_the_config() -> None:
    from worker import app

    assert app.main == "longparser"
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late is True
    assert app.conf.worker_max_memory_per_child == Settings().max_memory_per_child_kb


EXAMPLE_VARIABLE = re.compile(r"^# (LONGPARSER_[A-Z_]+)=(.*)$")


def _example_variables() -> dict[str, str]:
    """The example's variables and the default each shows (every one commented out)."""
    variables = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = EXAMPLE_VARIABLE.match(line)
        if match:
            variables[match.group(1)] = match.group(2).strip()
    return variables


def test_env_example_is_all_comments_so_copying_it_changes_nothing(tmp_path: Path) -> None:
    lines = ENV_EXAMPLE.read_text().splitlines()
    assert all(not line.strip() or line.startswith("#") for line in lines)
    (tmp_path / ".env").write_text(ENV_EXAMPLE.read_text())  # `cp config/.env.example .env`
    settings = Settings()
    assert settings.model_fields_set == set()  # nothing set explicitly: no resource became required
    assert settings == Settings(_env_file=None)


def test_env_example_documents_every_setting_with_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    variables = _example_variables()
    assert set(variables) == {f"LONGPARSER_{name.upper()}" for name in Settings.model_fields}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    from_example = Settings()
    for name in list(variables):
        monkeypatch.delenv(name)
    assert from_example == Settings()


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://nope", "scheme http:// is not supported; forms: redis://host:6379/0, rediss:// (TLS), "
                        "unix:///path/to/redis.sock or sentinel://host:26379"),
        ("127.0.0.1:6379", "not a URL (no scheme): write it as redis://127.0.0.1:6379/0"),
        ("localhost:6379", "not a URL (no scheme): write it as redis://localhost:6379/0"),
        ("redis://", "redis:// URL without a host"),
        ("redis://cache:port/0", "redis:// URL with a port that is not a number"),
        ("redis://cache:6379/zero", "redis:// URL whose database ('zero') is not a number"),
        ("unix://", "unix:// URL without a socket path"),
        ("sentinel://a:26379;redis://b:6379", "a ;-separated list must be sentinel:// URLs only"),
    ],
)
@pytest.mark.parametrize("variable", ["LONGPARSER_BROKER_URL", "LONGPARSER_RESULT_URL"])
def test_a_url_the_service_cannot_use_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, variable: str, url: str, fragment: str
) -> None:
    monkeypatch.setenv(variable, url)
    monkeypatch.setenv("LONGPARSER_SENTINEL_MASTER", "m")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    message = str(caught.value)
    assert message.startswith(f"{variable.removeprefix('LONGPARSER_').lower()} ({variable}=")
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "url",
    ["redis://127.0.0.1:6379/0", "rediss://:p%40ss@cache.example:6380/2", "unix:///run/redis.sock",
     "redis://cache", "sentinel://:pw@10.0.0.1:26379/0;sentinel://10.0.0.2:26380"],
)
def test_every_url_form_the_service_reads_is_accepted(url: str) -> None:
    assert Settings(broker_url=url, result_url=url, sentinel_master="m").broker_url == url


def test_a_refused_url_never_shows_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGPARSER_BROKER_URL", "http://:hunter2@cache:6379/0")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    assert "hunter2" not in str(caught.value)
    assert "LONGPARSER_BROKER_URL='http://:**@cache:6379/0'" in str(caught.value)


def test_long_values_and_many_problems_stay_one_short_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGPARSER_KEY_PREFIX", "x " * 5000)
    for name in ("CONCURRENCY", "TORCH_THREADS", "RESULT_TTL", "MAX_PAYLOAD_BYTES", "SOFT_TIME_LIMIT",
                 "HARD_TIME_LIMIT"):
        monkeypatch.setenv(f"LONGPARSER_{name}", "-1")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    message = str(caught.value)
    assert len(message) < 800
    assert message.endswith("; ... and 2 more")


ENTRY_POINTS = {
    "submit": [sys.executable, "-m", "cli", "submit", "examples/sample_document.json"],
    "result": [sys.executable, "-m", "cli", "result", "some-document"],
    "chunk": [sys.executable, "-m", "cli", "chunk", "examples/sample_document.json"],
    "worker": [sys.executable, "-m", "celery", "-A", "worker", "worker", "-c", "1"],
    "make run": [sys.executable, "-m", "cli.demo"],
}


@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
@pytest.mark.parametrize("url", ["http://nope", "127.0.0.1:6379", "localhost:6379"])
def test_a_bad_url_stops_every_entry_point_with_one_line(entry_point: str, url: str) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    env.update(LONGPARSER_RESULT_URL=url, PYTHONPATH=str(root))
    done = subprocess.run(ENTRY_POINTS[entry_point], capture_output=True, text=True, cwd=root, env=env,
                          timeout=60, check=False)
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "result_url (LONGPARSER_RESULT_URL=" in lines[0]
    assert done.stdout == ""


def test_the_start_limit_is_0_or_at_least_2(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().max_starts == 3
    monkeypatch.setenv("LONGPARSER_MAX_STARTS", "1")
    with pytest.raises(SettingsError, match=r"^max_starts \(LONGPARSER_MAX_STARTS='1'\): must be 0 \(off\)"):
        get_settings()


def test_the_event_consumers_url_defaults_to_the_result_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGPARSER_RESULT_URL", "redis://store:6379/2")
    assert Settings().events_consumer_url == "redis://store:6379/2"
    monkeypatch.setenv("LONGPARSER_EVENTS_URL", "rediss://longparser-events:pw@store:6380/2")
    assert Settings().events_consumer_url == "rediss://longparser-events:pw@store:6380/2"
    monkeypatch.setenv("LONGPARSER_EVENTS_URL", "store:6379")
    with pytest.raises(SettingsError, match=r"^events_url \(LONGPARSER_EVENTS_URL='store:6379'\): not a URL"):
        get_settings()


def test_the_store_the_broker_and_the_blocking_reads_share_one_set_of_timeouts() -> None:
    from service.celeryconfig import celery_config
    from service.events import MAX_BLOCK_S
    from service.redis_client import CONNECT_TIMEOUT_S, REPLY_TIMEOUT_S, SENTINEL_OPTIONS, redis_client

    url = "redis://127.0.0.1:6399/0"
    store = redis_client(url, Settings(broker_url=url, result_url=url)).connection_pool.connection_kwargs
    broker = celery_config(Settings(broker_url=url, result_url=url))["broker_transport_options"]
    expected = (REPLY_TIMEOUT_S, CONNECT_TIMEOUT_S)
    assert (store["socket_timeout"], store["socket_connect_timeout"]) == expected
    assert (broker["socket_timeout"], broker["socket_connect_timeout"]) == expected
    sentinel = "sentinel://10.0.0.1:26379"
    sentinel_settings = Settings(broker_url=sentinel, result_url=sentinel, sentinel_master="lp-master")
    options = celery_config(sentinel_settings)["broker_transport_options"]
    assert options["sentinel_kwargs"] == SENTINEL_OPTIONS
    assert MAX_BLOCK_S < REPLY_TIMEOUT_S


def test_the_vector_store_is_off_by_default_and_takes_postgres_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    assert (settings.vector_store_url, settings.vector_collection) == (None, "longparser_chunks")
    monkeypatch.setenv("LONGPARSER_VECTOR_STORE_URL", "postgresql://lp:s3cret@db:5432/vectors")
    monkeypatch.setenv("LONGPARSER_VECTOR_COLLECTION", "minilm_chunks")
    assert (get_settings().vector_store_url, get_settings().vector_collection) == \
        ("postgresql://lp:s3cret@db:5432/vectors", "minilm_chunks")
    get_settings.cache_clear()
    monkeypatch.setenv("LONGPARSER_VECTOR_STORE_URL", "mysql://lp:s3cret@db/vectors")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    assert "LONGPARSER_VECTOR_STORE_URL='mysql://lp:**@db/vectors'" in str(caught.value)
    assert "s3cret" not in str(caught.value) and "postgresql://" in str(caught.value)
    get_settings.cache_clear()
    monkeypatch.setenv("LONGPARSER_VECTOR_STORE_URL", "")
    monkeypatch.setenv("LONGPARSER_VECTOR_COLLECTION", "Robert'); DROP TABLE students;--")
    with pytest.raises(SettingsError, match="LONGPARSER_VECTOR_COLLECTION"):
        get_settings()
