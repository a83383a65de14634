"""Each run's mean context window in characters and tokens (results.json ``cutoff``), the sweep leaderboard's columns,
and compare's note when chunk-level metrics meet windows of different sizes."""

from pathlib import Path

import pytest
import yaml

import harness.api as harness_api
from harness.pipeline.sweep import build_leaderboard
from harness.render.sweep import leaderboard_markdown
from harness.stats.compare import compare_runs, window_size_note

ROOT = Path(__file__).resolve().parents[2]  # the checkout


def _demo(name: str, chunking: dict, cutoff: dict | None = None):
    cfg = yaml.safe_load((ROOT / "configs" / "demo-bm25.yaml").read_text(encoding="utf-8"))
    for key in ("corpus", "goldset"):
        cfg[key]["path"] = str(ROOT / "configs" / cfg[key]["path"])
    cfg.update(name=name, chunking=chunking, metrics=["recall@5", "ndcg@10"])
    if cutoff:
        cfg["cutoff"] = cutoff
    return harness_api.run(cfg, log=lambda m: None)


@pytest.fixture(scope="module")
def runs():
    return (_demo("one-sentence", {"strategy": "sentences", "size": 1}),
            _demo("three-sentences", {"strategy": "sentences", "size": 3}),
            _demo("three-again", {"strategy": "sentences", "size": 3}))


def test_mean_window_size_is_the_windows_chunk_spans_and_words(runs):
    for result in runs:
        texts = result.chunk_text
        chars, words = [], []
        for q in result.queries:
            window = [h for h in q.hits if h.in_window]
            assert len(window) == q.effective_k
            chars.append(sum(h.end - h.start for h in window))
            words.append(sum(len(texts[h.chunk_id].split()) for h in window))
        assert result.cutoff.mean_window_chars == pytest.approx(sum(chars) / len(chars), abs=1e-9)
        assert result.cutoff.mean_window_tokens == pytest.approx(sum(words) / len(words), abs=1e-9)
    assert runs[1].cutoff.mean_window_chars > 2 * runs[0].cutoff.mean_window_chars


def test_compare_notes_windows_of_different_sizes_on_chunk_metrics_only(runs):
    small, big, same = runs
    got = compare_runs([small, big], ["chunk.recall@5"])
    note = [w for w in got.warnings if "context windows of different sizes" in w]
    a, b = small.cutoff, big.cutoff
    assert note == [f"one-sentence and three-sentences have context windows of different sizes (mean "
                    f"{a.mean_window_tokens:.0f} against {b.mean_window_tokens:.0f} tokens, {a.mean_window_chars:.0f} "
                    f"against {b.mean_window_chars:.0f} characters): bigger windows win chunk-level recall trivially; "
                    f"compare at an equal budget (cutoff.token_budget) or on the evidence metrics"]
    assert not [w for w in compare_runs([small, big], ["doc.ndcg@10"]).warnings if "context windows" in w]
    assert not [w for w in compare_runs([big, same], ["chunk.recall@5"]).warnings if "context windows" in w]


def test_the_note_takes_ten_percent_either_way(runs):
    small = runs[0]
    chars = small.cutoff.mean_window_chars
    tokens = small.cutoff.mean_window_tokens

    def resized(name, factor):
        cut = small.cutoff.model_copy(update={"mean_window_chars": chars * factor, "mean_window_tokens": tokens})
        return small.model_copy(update={"name": name, "cutoff": cut})

    def noted(other):
        return any("context windows" in w for w in compare_runs([small, other], ["chunk.recall@5"]).warnings)
    assert not noted(resized("b", 1.099)) and noted(resized("c", 1.11)) and noted(resized("d", 1 / 1.11))


def test_leaderboard_shows_each_runs_window_size(runs):
    small, big, _ = runs
    board, _, _ = build_leaderboard("chunk-sweep", "chunk.recall@5", [("one-sentence", {"size": 1}, small),
                                                                      ("three-sentences", {"size": 3}, big)])
    by_run = {r["run"]: r for r in board["runs"]}
    assert by_run["one-sentence"]["mean_window_chars"] == small.cutoff.mean_window_chars
    assert by_run["three-sentences"]["mean_window_tokens"] == big.cutoff.mean_window_tokens
    text = leaderboard_markdown(board)
    assert "| window tokens | window chars |" in text
    assert f"| {big.cutoff.mean_window_tokens:.1f} | {big.cutoff.mean_window_chars:.0f} |" in text
    best, other = (small, big) if board["best"] == "one-sentence" else (big, small)
    assert board["notes"] == [window_size_note(best, other)] and board["notes"][0].startswith(f"{best.name} and ")
    assert f"Note: {board['notes'][0].split(':')[0]}" in text
    from harness.render.leaderboard_html import section as _leaderboard_section

    page = _leaderboard_section(board)
    assert "<th>window tokens</th><th>window chars</th>" in page
    assert f"<td>{big.cutoff.mean_window_tokens:.1f}</td><td>{big.cutoff.mean_window_chars:.0f}</td>" in page
    assert '<p class="muted">Note: ' in page


def test_report_states_the_window_size(runs):
    from harness.render.outputs import markdown

    cut = runs[1].cutoff
    assert (f"(mean effective k {cut.mean_effective_k:.2f}; mean window {cut.mean_window_tokens:.0f} words, "
            f"{cut.mean_window_chars:.0f} characters)") in markdown(runs[1])


def test_a_token_budgets_tokenizer_counts_the_window_tokens():
    from test_chunkers import TOKENIZER

    if TOKENIZER is None:
        pytest.skip("the bundled MiniLM package is not installed")
    from tokenizers import Tokenizer

    from harness.render.outputs import markdown

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    result = _demo("budgeted", {"strategy": "sentences", "size": 2},
                   {"token_budget": 200, "tokenizer": str(TOKENIZER)})
    texts = result.chunk_text
    tokens = [sum(len(tok.encode(texts[h.chunk_id], add_special_tokens=False).ids) for h in q.hits if h.in_window)
              for q in result.queries]
    assert result.cutoff.mean_window_tokens == pytest.approx(sum(tokens) / len(tokens), abs=1e-9)
    assert max(tokens) <= 200
    assert f"mean window {result.cutoff.mean_window_tokens:.0f} tokens, " in markdown(result)
