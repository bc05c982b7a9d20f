"""The retrieval benchmark's harness (lpeval.bench_retrieval) and its set (eval/retrieval_v1), no model.

A stub encoder (bag of words, hashed) stands in for the pinned model; tokens are counted by the
tokenizer file the repository ships. The figures of the real run are in bench/README.md.
"""

import json
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from loaders.tokenizer import load_model_counter
from lpeval import bench_retrieval as bench
from lpeval.retrieval_set import (
    DEFAULT_SET,
    RetrievalSetError,
    read_documents,
    read_split,
    split_documents,
    validate_main,
    validate_set,
)
from schemas.config import RECOMMENDED_CONFIG, ChunkingConfig

ROOT = Path(__file__).resolve().parents[2]
SECOND_SET = ROOT / "eval" / "retrieval_v2"
SMALL_DEV = "dl-docx-word-sample"


class BagOfWords:
    """Unit vectors of hashed lower-case words: questions sharing words with a chunk rank it high."""

    name = "stub"
    weights_sha256 = "0" * 64

    def encode(self, texts):
        rows = np.zeros((len(texts), 512))
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, hash(word) % 512] += 1.0
        return rows


@pytest.fixture(scope="module")
def tokens():
    return bench.ModelTokens(load_model_counter().tokens.tokenizer)


def test_the_readme_shows_the_recommended_config():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r'`(\{"max_tokens": 256.*?\})`', readme, re.S)
    assert shown is not None
    assert json.loads(shown.group(1).replace("\n", " ")) == dict(RECOMMENDED_CONFIG)
    ChunkingConfig(**RECOMMENDED_CONFIG)


def test_rows_are_the_recommended_config_plus_their_own_keys():
    rows = bench.our_configs()
    assert rows[bench.RECOMMENDED_ROW] == dict(RECOMMENDED_CONFIG)
    assert rows["ours: default config"] is None
    for name, keys in {**bench.ABLATIONS, **bench.PENDING_ABLATIONS}.items():
        assert rows[f"ours: recommended, {name}"] == {**RECOMMENDED_CONFIG, **keys}


def test_a_key_the_engine_does_not_know_makes_the_row_not_applicable():
    config, reason = bench.config_or_reason({**RECOMMENDED_CONFIG, "no_such_setting": True})
    assert config is None and reason == "n/a: this engine has no no_such_setting"
    config, reason = bench.config_or_reason(None)
    assert config == ChunkingConfig() and reason is None
    with pytest.raises(ValueError):
        bench.config_or_reason({"max_tokens": 0})  # a known key with a bad value is an error


def test_the_markdown_hook_takes_the_first_reader_installed(monkeypatch):
    monkeypatch.setattr(bench, "MARKDOWN_READERS", ("no_such_module:read",))
    assert bench.markdown_reader() is None
    module = types.ModuleType("fake_markdown_reader")
    module.read = lambda text: [{"block_id": "md-0", "type": "paragraph", "text": text}]
    monkeypatch.setitem(sys.modules, "fake_markdown_reader", module)
    monkeypatch.setattr(bench, "MARKDOWN_READERS", ("no_such_module:read", "fake_markdown_reader:read"))
    assert bench.markdown_reader() is module.read


def test_model_tokens_count_and_cut(tokens):
    text = "Retrieval benchmarks compare chunkers on real documents."
    n = tokens.count(text)
    assert n > 5
    cut = tokens.cut(text, 3)
    assert text.startswith(cut) and tokens.count(cut) == 3
    assert tokens.cut(text, n + 10) == text and tokens.cut(text, 0) == ""


def test_the_set_loads_and_splits_by_document():
    documents = read_documents()
    dev, test = split_documents("dev"), split_documents("test")
    assert {d.id for d in dev}.isdisjoint({d.id for d in test})
    assert len(dev) + len(test) == len(documents) >= 10
    with pytest.raises(RetrievalSetError):
        split_documents("train")


@pytest.mark.parametrize("set_dir", [DEFAULT_SET, SECOND_SET])
def test_the_frozen_questions_pass_the_validator(set_dir, capsys):
    assert validate_main(set_dir, []) == 0
    assert capsys.readouterr().out.rstrip().endswith("OK")


def test_the_validator_refuses_an_answer_found_twice_and_a_reserved_file(tmp_path):
    import shutil

    shutil.copytree(SECOND_SET, tmp_path / "set")
    questions = json.loads((tmp_path / "set" / "questions_v1.json").read_text(encoding="utf-8"))
    ods = next(d for d in questions["documents"] if d["id"] == "v2-ods-freshwater-ducks")
    ods["questions"][0]["answer"] = "Freshwater Ducks"  # the title table's text holds it as well
    ods["file"] = "documents/normal_4pages.json"
    shutil.copy(tmp_path / "set" / "documents" / "odf_table_with_title_01.ods.json",
                tmp_path / "set" / "documents" / "normal_4pages.json")
    (tmp_path / "set" / "questions_v1.json").write_text(json.dumps(questions), encoding="utf-8")
    _, errors = validate_set(tmp_path / "set")
    assert any("occurs 2 times" in e for e in errors)
    assert any("normal_4pages.json is a reserved document" in e for e in errors)


def test_the_validator_refuses_a_file_the_tests_already_use(tmp_path):
    import shutil

    shutil.copytree(SECOND_SET, tmp_path / "set")
    fixture = ROOT / "tests" / "fixtures" / "docling_inline" / "formatting.html.json"
    shutil.copy(fixture, tmp_path / "set" / "documents" / "kvp_data_example.html.json")
    _, errors = validate_set(tmp_path / "set")
    assert any("already used in tests/fixtures/docling_inline/formatting.html.json" in e for e in errors)


def test_the_second_set_is_test_only_and_reads_markdown_through_our_reader():
    from loaders.markdown import blocks_from_markdown

    with pytest.raises(RetrievalSetError, match="no 'dev' split"):
        split_documents("dev", SECOND_SET)
    documents = split_documents("test", SECOND_SET)
    page = next(d for d in documents if d.is_markdown)
    text = page.path.read_text(encoding="utf-8")
    assert page.markdown() == text
    assert page.blocks() == blocks_from_markdown(text, source_file=page.path.name)
    assert page.docling()["name"] and page.docling_path.name == page.path.name + ".json"
    pdf = next(d for d in documents if not d.is_markdown)
    assert pdf.docling() == json.loads(pdf.path.read_text(encoding="utf-8"))


def test_one_document_end_to_end_with_a_stub_encoder(tokens):
    documents = [d for d in split_documents("dev") if d.id == SMALL_DEV]
    everything = "\n".join(q.answer for q in documents[0].questions)
    anchors = {"split": "dev", "markdown": {}, "anchors": {
        "all-in-one": {"description": "one chunk holding every answer",
                       "documents": {SMALL_DEV: [{"text": "x", "embed": everything}]}},
        "missing": {"description": "a library that could not run", "unavailable": "n/a: not installed"},
    }}
    counter = load_model_counter()
    rows, markdown = bench.build_rows(documents, anchors, False, tokens, None, counter)
    names = [r.name for r in rows]
    assert names[0] == bench.RECOMMENDED_ROW and "anchor: all-in-one" in names
    assert "anchor: page chunker" in names
    semantic = next(r for r in rows if "semantic" in r.name)
    rows.remove(semantic)  # semantic mode needs the real encoder
    texts = [c.embed for r in rows for c in r.chunks.get(SMALL_DEV, [])]
    vectors = bench.embed_all(BagOfWords(), [*texts, *(q.question for q in documents[0].questions)])
    scores = bench.score_rows(rows, documents, markdown, tokens, vectors)
    result = bench.report(rows, documents, scores, tokens)

    by_name = {r["name"]: r for r in result["rows"]}
    one = by_name["anchor: all-in-one"]
    assert one["hit@1"] == one["recall@1024"] == 1.0 and one["chunks"] == 1
    assert by_name["anchor: missing"]["unavailable"] == "n/a: not installed"
    ours = by_name[bench.RECOMMENDED_ROW]
    n = len(documents[0].questions)
    assert ours["questions"] == n == sum(k["questions"] for k in ours["by_kind"].values())
    assert 0.0 <= ours["hit@1"] <= ours["hit@5"] <= 1.0
    assert ours["recall@512"] <= ours["recall@1024"]
    assert ours["cut_mid_fact"] == 0 and ours["over_window"] == 0  # strict mode at the window
    assert ours["tokens_embedded"] == sum(tokens.count(c.embed) for c in rows[0].chunks[SMALL_DEV])
    assert len(ours["per_question"]) == n
    assert result["best_per_question"]["hit@1"] == 1.0
    for name in [*bench.SMALL_TO_BIG_ROWS, bench.BOTH_ROW]:
        row = by_name[name]
        assert row["questions"] == n and row["recall@512"] <= row["recall@1024"]
    # parents are larger than the chunks they come from; both granularities embed more
    assert by_name["ours: fit, small-to-big"]["mean_returned_tokens"] > ours["mean_returned_tokens"]
    assert by_name[bench.BOTH_ROW]["chunks"] > ours["chunks"]
    tables = bench.markdown_tables(result)
    for row in result["rows"]:
        assert tables.count(f"| {row['name']} |") == (1 if "unavailable" in row else 2)
    assert "| anchor: missing | n/a: not installed |" in tables


def _sectioned_result():
    from adapters import chunk_markdown

    markdown = ("# Alpha\n\nalpha one. " + "alpha " * 150 + "\n\nalpha two. " + "beta " * 150
                + "\n\n# Gamma\n\ngamma one.")
    return chunk_markdown(markdown, RECOMMENDED_CONFIG, bench_resources(), document_id="d")


def bench_resources():
    from longparser import Resources

    return Resources(model_counter=load_model_counter())


def test_small_to_big_returns_each_hits_parent_once_in_rank_order(tokens):
    result = _sectioned_result()
    assert len(result.chunks) == 3
    expand = bench._parents_of_ranked(result, None, tokens)
    alpha = "\n\n".join(c.text for c in result.chunks[:2])
    assert expand([2, 0, 1]) == [result.chunks[2].text, alpha]
    capped = bench._parents_of_ranked(result, tokens.count(alpha) - 1, tokens)
    assert capped([1, 2]) == [result.chunks[1].text, result.chunks[2].text]  # Alpha over the cap


def test_both_granularities_index_the_chunks_and_their_small_sections(tokens):
    result = _sectioned_result()
    units = bench._both_granularities(result, tokens)
    embedded = [c.embed_text or c.text for c in result.chunks]
    assert [u[0] for u in units[:3]] == embedded
    alpha = "\n\n".join(c.text for c in result.chunks[:2])
    assert units[3:] == [(alpha, alpha, frozenset(c.chunk_id for c in result.chunks[:2]))]  # Gamma: one chunk
    expand = bench._first_news(units)
    assert expand([0, 3, 1, 2]) == [embedded[0], alpha, embedded[2]]  # chunk 1 came with Alpha


@pytest.mark.parametrize("set_dir", [DEFAULT_SET, SECOND_SET])
def test_the_questions_are_the_frozen_file(set_dir):
    """Labels are never edited: a correction is a new file (eval/retrieval_v1/README.md)."""
    import hashlib

    readme = (set_dir / "README.md").read_text(encoding="utf-8")
    recorded = re.search(r"`questions_v1.json` \| `([0-9a-f]{64})`", readme)
    assert recorded is not None
    assert hashlib.sha256((set_dir / "questions_v1.json").read_bytes()).hexdigest() == recorded.group(1)


def test_the_oracle_row_chooses_among_chunkers_not_among_variations():
    from lpeval.retrieval_metrics import QuestionScore

    def score(rank):
        return QuestionScore(rank=rank, recalled={b: rank is not None for b in bench.CONTEXT_BUDGETS},
                             cut_mid_fact=False)

    scores = {bench.RECOMMENDED_ROW: [score(3), score(None)],
              f"{bench.RECOMMENDED_ROW}, rows as pipe": [score(1), score(1)],
              "anchor: hybrid": [score(2), score(None)]}
    assert [bench.is_chunker(n) for n in scores] == [True, False, True]
    import dataclasses

    (document,) = [d for d in split_documents("dev") if d.id == SMALL_DEV]
    documents = [dataclasses.replace(document, questions=document.questions[:2])]
    rows = [bench.Row(n, "", "blocks", chunks={SMALL_DEV: [bench.Chunked("a chunk")]}) for n in scores]
    result = bench.report(rows, documents, scores, bench.ModelTokens(load_model_counter().tokens.tokenizer))
    oracle, best = result["best_chunker_per_question"], result["best_per_question"]
    assert oracle["chunkers"] == [bench.RECOMMENDED_ROW, "anchor: hybrid"]
    assert [q["rank"] for q in oracle["per_question"]] == [2, None]
    assert oracle["mrr@10"] == 0.25 and best["mrr@10"] == 1.0
    tables = bench.markdown_tables({**result, "rows": []})
    assert tables.index("| *best chunker per question* |") < tables.index("| *best row per question* |")


def test_rows_run_at_the_window_of_the_model():
    assert bench.our_configs()[bench.RECOMMENDED_ROW] == dict(RECOMMENDED_CONFIG)
    from lpeval.encoders import SECOND_ENCODER

    rows = bench.our_configs(SECOND_ENCODER, sizes=(256, 320))
    assert rows[bench.RECOMMENDED_ROW] == {"fit": "all-mpnet-base-v2"}  # the engine fits it to 384
    recommended = rows[bench.RECOMMENDED_ROW]
    assert rows[f"{bench.RECOMMENDED_ROW}, max_tokens 320"] == {**recommended, "max_tokens": 320}
    quick = bench.our_configs(SECOND_ENCODER, ablations=False)
    assert list(quick) == [bench.RECOMMENDED_ROW, "ours: default config"]
    tokenizer = load_model_counter().tokens.tokenizer
    assert bench.ModelTokens(tokenizer).room == 254 and bench.ModelTokens(tokenizer, 384).room == 382


def test_only_the_benchmark_s_encoders_are_accepted(tmp_path):
    from loaders.pinned_model import EncoderUnavailable
    from lpeval.encoders import PINNED_ENCODER

    assert bench.bench_encoder(None) is PINNED_ENCODER
    (tmp_path / "model.safetensors").write_bytes(b"not a known model")
    with pytest.raises(EncoderUnavailable, match="none of the benchmark's encoders"):
        bench.bench_encoder(str(tmp_path))


def test_a_model_directory_without_weights_or_a_tokenizer_is_refused_in_one_line(tmp_path):
    from loaders.pinned_model import EncoderUnavailable
    from loaders.tokenizers import TokenizerUnavailable
    from lpeval.encoders import KNOWN_ENCODERS

    with pytest.raises(EncoderUnavailable, match=r"has no model\.safetensors"):
        bench.bench_encoder(str(tmp_path))
    second = next(e for e in KNOWN_ENCODERS.values() if e.name != "all-MiniLM-L6-v2")
    with pytest.raises(TokenizerUnavailable, match=r"cannot load .*tokenizer\.json"):
        bench.model_counter(second, tmp_path)


def _write_set(tmp_path, split, documents):
    (tmp_path / "split.json").write_text(json.dumps(split), encoding="utf-8")
    (tmp_path / "questions_v1.json").write_text(json.dumps({"documents": documents}), encoding="utf-8")
    return tmp_path


QUESTION = {"id": "q1", "kind": "prose", "question": "What?", "answer": "an answer", "rationale": "why"}


@pytest.mark.parametrize("split, documents, says", [
    ({"train": []}, [], "expected the keys"),
    ({"test": ["a"]}, "not a list", "expected an object with a 'documents' list"),
    ({"test": ["a"]}, [{"id": "a", "file": "a.json"}], "needs 'id', 'file' and 'format' strings"),
    ({"test": ["a"]}, [{"id": "a", "file": "a.json", "format": "docling",
                        "questions": [{**QUESTION, "answer": " "}]}], "needs non-empty strings"),
    ({"test": ["a"]}, [{"id": "a", "file": "a.json", "format": "docling",
                        "questions": [{**QUESTION, "kind": "trivia"}]}], "kind 'trivia' is not one of"),
    ({"test": ["a"]}, [{"id": "a", "file": "a.md", "format": "markdown"}], "needs 'docling_file'"),
])
def test_a_malformed_set_is_refused_naming_what_is_wrong(tmp_path, split, documents, says):
    set_dir = _write_set(tmp_path, split, documents)
    with pytest.raises(RetrievalSetError, match=says):
        read_split(set_dir)
        read_documents(set_dir)


def test_an_unreadable_set_file_is_refused_naming_the_file(tmp_path):
    with pytest.raises(RetrievalSetError, match=r"cannot read .*questions_v1\.json"):
        split_documents("test", tmp_path)
    (tmp_path / "split.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(RetrievalSetError, match=r"cannot read .*split\.json"):
        read_split(tmp_path)
    with pytest.raises(RetrievalSetError, match="unknown split 'train'"):
        split_documents("train", tmp_path)


class StubLoaders:
    """``loaders.encoder.load_encoder`` standing in for the pinned model (semantic rows use it too)."""

    def __init__(self, monkeypatch):
        import loaders.encoder

        monkeypatch.setattr(loaders.encoder, "load_encoder", self.load_encoder)
        self.calls = 0

    def load_encoder(self, model_path=None, threads=None, counter=None, **kwargs):
        self.calls += 1
        return BagOfWords()


def test_the_command_runs_one_document_and_writes_both_reports(tmp_path, monkeypatch, capsys):
    stub = StubLoaders(monkeypatch)
    prefix = tmp_path / "out" / "smoke"
    status = bench.main(["--split", "dev", "--document", SMALL_DEV, "--only-ours", "-o", str(prefix)])
    assert status == 0 and stub.calls == 1
    result = json.loads(prefix.with_suffix(".json").read_text(encoding="utf-8"))
    assert result["split"] == "dev" and result["model"] == "stub"
    assert result["recommended_config"] == dict(RECOMMENDED_CONFIG)
    assert all(not r["name"].startswith("anchor: ") or r["name"] == "anchor: page chunker"
               for r in result["rows"])
    assert prefix.with_suffix(".md").read_text(encoding="utf-8").strip() in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "status", "says"), [
    (["--split", "dev", "--document", "no-such-document"], 2, "not in the dev split"),
    (["--split", "dev", "--anchors", "/no/such/anchors.json"], 2, "cannot read /no/such/anchors.json"),
    (["--split", "test", "--anchors", "{anchors}"], 2, "holds the 'dev' split, not 'test'"),
    (["--split", "dev", "--set", "/no/such/set"], 2, "/no/such/set"),
    (["--split", "dev", "--set", "eval/retrieval_v2"], 2, "has no 'dev' split"),
    (["--split", "dev", "--anchors", "{anchors384}"], 2, "chunked at 384 tokens, not at"),
    (["--split", "dev", "--anchors", "{anchors_v2}"], 2, "holds the set 'retrieval_v2', not 'retrieval_v1'"),
])
def test_the_command_refuses_bad_arguments_in_one_line(argv, status, says, tmp_path, monkeypatch, capsys):
    StubLoaders(monkeypatch)
    files = {"{anchors}": {"split": "dev", "anchors": {}},
             "{anchors384}": {"split": "dev", "budget": 384, "anchors": {}},
             "{anchors_v2}": {"set": "retrieval_v2", "split": "dev", "anchors": {}}}
    for name, content in files.items():
        (tmp_path / name.strip("{}")).write_text(json.dumps(content), encoding="utf-8")
    argv = [str(tmp_path / a.strip("{}")) if a in files else a for a in argv]
    assert bench.main(argv) == status
    err = capsys.readouterr().err.strip()
    assert err.startswith("lpeval bench-retrieval: error: ") and says in err and "\n" not in err


def test_the_command_exits_3_without_the_model(monkeypatch, capsys):
    import loaders.encoder
    from loaders.pinned_model import EncoderUnavailable

    def unavailable(*args, **kwargs):
        raise EncoderUnavailable("the pinned model is not installed")

    monkeypatch.setattr(loaders.encoder, "load_encoder", unavailable)
    assert bench.main(["--split", "dev", "--document", SMALL_DEV]) == 3
    assert "the pinned model is not installed" in capsys.readouterr().err


def test_long_texts_are_embedded_in_windows_of_the_counter_s_own_window():
    """The second encoder reads 384 tokens: its texts are cut into windows of 384, not 256."""
    from loaders.encoder import _windows
    from loaders.tokenizers import WordCounter

    counter = load_model_counter()
    assert _windows(counter).room == 254
    assert _windows(WordCounter(counter.tokens, name="wider", kind="hf", window=384)).room == 382
