"""Live retrievers against real local HTTP servers started here (http.server in a thread, stopped by a finalizer):
``http`` serving a known run gives exactly the metrics of that run imported as ``external``; injected 500s,
timeouts and malformed JSON are retried or reported per query as specified; ``elasticsearch``/``opensearch`` against
a fake speaking ``_search``; ``python`` adapters; ``tantivy``; per-query latency in the result and in gates."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from clihelp import DEMO, assert_input_error, demo_config, harness

from harness.config.schema import parse_config
from harness.core.errors import RetrieverError
from harness.pipeline.assemble import run_experiment

BASE = {"name": "live", "corpus": {"path": str(DEMO / "corpus.jsonl")},
        "chunking": {"strategy": "sentences", "size": 2}, "goldset": {"path": str(DEMO / "goldset.jsonl")},
        "cutoff": {"k": 5}, "depth": 20,
        "metrics": ["precision@5", "recall@5", "rr@10", "ap", "ndcg@10", "recall@20"]}


def run(retriever: dict, tmp: Path, **extra):
    cfg = parse_config({**BASE, "retriever": retriever, **extra}, "t", tmp)
    return run_experiment(cfg, progress=False, log=lambda m: None)


class _QuietOnHangUp(ThreadingHTTPServer):
    """A client that hangs up mid-reply (a run that stops at its first failed requests) is no error of the server:
    not printed. The CLI runs in the test's process (clihelp), so a server thread's traceback would otherwise land
    in the command's captured stderr."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class Service:
    """A retrieval service: answers POST {"query", "k"} (or GET ?query=&k=) from ``answers`` (query text -> hits).
    ``script`` lists, per query text, what to do on successive requests before answering: an HTTP status, "slow"
    (sleep past the client's timeout), or "garbage" (a 200 that is not JSON)."""

    def __init__(self):
        self.answers: dict[str, list[dict]] = {}
        self.script: dict[str, list] = {}
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.slow_s = 1.0
        self.shape = lambda hits: {"hits": hits}
        self.search = None  # an _search handler for the search-engine fake
        self.delay_s = 0.0  # every answer takes this long (to see concurrency)
        self.in_flight = self.max_in_flight = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet test output
                pass

            def _reply(self, status: int, body: bytes, ctype: str = "application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, payload: dict):
                with service.lock:
                    service.requests.append({"path": self.path, "payload": payload, "headers": dict(self.headers)})
                if service.search is not None:
                    status, body = service.search(self.path, payload)
                    return self._reply(status, json.dumps(body).encode())
                text = payload.get("query")
                with service.lock:
                    todo = service.script.get(text, [])
                    step = todo.pop(0) if todo else None
                if step == "slow":
                    time.sleep(service.slow_s)
                    return self._reply(200, b'{"hits": []}')
                if step == "garbage":
                    return self._reply(200, b"<html>oops</html>", "text/html")
                if isinstance(step, int):
                    return self._reply(step, b'{"error": "injected"}')
                with service.lock:
                    service.in_flight += 1
                    service.max_in_flight = max(service.max_in_flight, service.in_flight)
                time.sleep(service.delay_s)
                with service.lock:
                    service.in_flight -= 1
                hits = service.answers.get(text, [])[: int(payload.get("k", 10))]
                self._reply(200, json.dumps(service.shape(hits)).encode())

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self._handle(json.loads(self.rfile.read(n) or b"{}"))

            def do_GET(self):
                q = parse_qs(urlsplit(self.path).query)
                self._handle({key: v[0] for key, v in q.items()})

        self.server = _QuietOnHangUp(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def service(request):
    s = Service()
    request.addfinalizer(s.stop)
    return s


@pytest.fixture(scope="module")
def known_run(tmp_path_factory):
    """A known run over the demo: BM25's top 20 per query, each hit written in one of the hit forms (chunk id,
    doc id + span, doc id + text) so every form goes through both paths."""
    tmp = tmp_path_factory.mktemp("known")
    result = run({"kind": "bm25", "backend": "fast"}, tmp)
    text = result.chunk_text
    answers, lines = {}, []
    for i, q in enumerate(result.queries):
        hits = []
        for j, h in enumerate(q.hits):
            form = (i + j) % 3
            if form == 0:
                hit = {"chunk_id": h.chunk_id, "doc_id": h.doc_id, "score": h.score}
            elif form == 1:
                hit = {"doc_id": h.doc_id, "start": h.start, "end": h.end, "score": h.score}
            else:
                hit = {"chunk_id": h.chunk_id, "score": h.score}
            hits.append(hit)
        answers[q.text] = hits
        lines.append(json.dumps({"query_id": q.id, "hits": [dict(h, doc_id=h.get("doc_id") or
                                                                  next(x.doc_id for x in q.hits
                                                                       if x.chunk_id == h["chunk_id"]))
                                                             for h in hits]}))
    path = tmp / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert text  # the run was made in this process
    return answers, path


def _same_metrics(a, b):
    assert a.summary.doc == b.summary.doc and a.summary.chunk == b.summary.chunk
    assert [q.metrics for q in a.queries] == [q.metrics for q in b.queries]
    assert [q.verdict.kind for q in a.queries] == [q.verdict.kind for q in b.queries]
    assert [[h.chunk_id for h in q.hits] for q in a.queries] == [[h.chunk_id for h in q.hits] for q in b.queries]


def test_http_defaults_give_the_metrics_of_the_same_run_imported_as_external(service, known_run, tmp_path):
    answers, path = known_run
    service.answers = answers
    live = run({"kind": "http", "url": service.url + "/search"}, tmp_path)
    external = run({"kind": "external", "path": str(path)}, tmp_path)
    _same_metrics(live, external)
    assert live.summary.chunk["ndcg@10"] > 0.5  # a real run, not an empty one
    # The default request: POST {"query", "k": depth}; one request per query, each logged with status and latency.
    assert {r["payload"]["k"] for r in service.requests} == {20}
    assert sorted(r["payload"]["query"] for r in service.requests) == sorted(q.text for q in live.queries)
    assert live.requests.sent == len(live.queries) and live.requests.failed == 0
    assert all(r.status == 200 and r.latency_ms > 0 for r in live.requests.log)
    assert live.latency.measured == "per request" and live.latency.queries == len(live.queries)
    assert 0 < live.latency.p50_ms <= live.latency.p95_ms <= live.latency.max_ms


def test_http_get_with_a_path_mapping_and_headers_from_the_environment(service, known_run, tmp_path, monkeypatch):
    answers, path = known_run
    # Another service's shape: {"data": {"results": [{"id", "payload": {"doc": ...}, "relevance"}]}}
    service.answers = {q: [{"id": h.get("chunk_id"), "payload": {"doc": h.get("doc_id"), "s": h.get("start"),
                                                                 "e": h.get("end")}, "relevance": h["score"]}
                           for h in hits] for q, hits in answers.items()}
    service.shape = lambda hits: {"data": {"results": hits}}
    monkeypatch.setenv("LIVE_TEST_TOKEN", "s3cret")
    live = run({"kind": "http", "url": service.url + "/q", "method": "GET", "params": {"query": "{query}", "k": "{k}"},
                "headers": {"X-Tenant": "demo"},
                "headers_env": {"Authorization": {"env": "LIVE_TEST_TOKEN", "prefix": "Bearer "}},
                "response": {"hits": "$.data.results", "chunk_id": "id", "doc_id": "payload.doc",
                             "start": "payload.s", "end": "payload.e", "text": None, "score": "relevance"}}, tmp_path)
    _same_metrics(live, run({"kind": "external", "path": str(path)}, tmp_path))
    assert all(r["headers"]["Authorization"] == "Bearer s3cret" and r["headers"]["X-Tenant"] == "demo"
               for r in service.requests)
    assert "s3cret" not in live.to_json()  # the secret is never echoed into results.json


def test_http_retries_500s_and_429s_then_answers(service, known_run, tmp_path):
    answers, path = known_run
    service.answers = answers
    texts = list(answers)
    service.script = {texts[0]: [500, 503], texts[1]: [429]}
    live = run({"kind": "http", "url": service.url, "retries": 2, "backoff_s": 0.01}, tmp_path)
    _same_metrics(live, run({"kind": "external", "path": str(path)}, tmp_path))
    log = {r.query_id: r for r in live.requests.log}
    first, second = live.queries[0].id, live.queries[1].id
    assert (log[first].attempts, log[second].attempts) == (3, 2) and live.requests.retried == 2


def test_failed_requests_stop_the_run_naming_each_query(service, known_run, tmp_path):
    answers, _ = known_run
    service.answers = answers
    texts = list(answers)
    service.slow_s = 1.0
    service.script = {texts[0]: [500] * 5, texts[1]: ["slow"] * 3, texts[2]: ["garbage"], texts[3]: [404]}
    with pytest.raises(RetrieverError) as err:
        run({"kind": "http", "url": service.url, "retries": 1, "backoff_s": 0.01, "timeout_s": 0.3}, tmp_path)
    msg = str(err.value)
    assert "failed for 4 of 46 queries" in msg
    ids = [q["id"] for q in map(json.loads, (DEMO / "goldset.jsonl").read_text().splitlines()[:4])]
    assert f"query {ids[0]!r}: HTTP 500" in msg and "after 2 attempt(s)" in msg
    assert f"query {ids[1]!r}: timed out" in msg
    assert f"query {ids[2]!r}: the response is not JSON" in msg
    assert f"query {ids[3]!r}: HTTP 404" in msg and "after 1 attempt(s)" in msg  # a 404 is not retried


def test_on_error_skip_keeps_failed_queries_out_of_the_run_never_as_zero_hits(service, known_run, tmp_path):
    answers, path = known_run
    service.answers = answers
    texts = list(answers)
    service.script = {texts[0]: [500] * 5, texts[1]: ["garbage"]}
    service.shape = lambda hits: {"hits": hits}
    live = run({"kind": "http", "url": service.url, "retries": 0, "on_error": "skip"}, tmp_path)
    failed = [live.queries[0].id, live.queries[1].id]
    assert live.requests.failed_query_ids == failed and live.requests.failed == 2
    # Listed by the counted rule as absent from the run (scored as such, and said so), never as an empty answer.
    assert set(failed) <= set(live.summary.counts.doc.absent_from_run_query_ids)
    for qid in failed:
        q = live.query(qid)
        assert q.hits == [] and q.verdict.detail["where"] == "absent_from_run", q.verdict
    # The other queries are scored exactly as the full run scores them.
    full = run({"kind": "external", "path": str(path)}, tmp_path)
    assert [q.metrics for q in live.queries[2:]] == [q.metrics for q in full.queries[2:]]


def test_malformed_hits_name_the_path(service, tmp_path):
    service.answers = {}
    service.shape = lambda hits: {"results": []}
    with pytest.raises(RetrieverError, match=r"the response has no '\$.hits'"):
        run({"kind": "http", "url": service.url}, tmp_path)
    service.shape = lambda hits: {"hits": [{"chunk_id": "x", "score": "high"}]}
    with pytest.raises(RetrieverError, match=r"hit 0 of '\$.hits': score 'high' at 'score' is not a number"):
        run({"kind": "http", "url": service.url}, tmp_path)


# ---- elasticsearch / opensearch connect mode against a fake ----------------------------------------------------

def _bm25_search_fake(tmp_path):
    """A fake that speaks POST /{index}/_search: answers the match query with harness's own BM25 over the demo
    chunks, in Elasticsearch's response shape, so its metrics must equal kind bm25's."""
    from harness.core.types import Query
    from harness.retrievers import BuildContext, build_retriever

    result = run({"kind": "bm25", "backend": "fast"}, tmp_path)
    cfg = parse_config({**BASE, "retriever": {"kind": "bm25", "backend": "fast"}}, "t", tmp_path)
    from harness.pipeline.prepare import prepare
    chunks = prepare(cfg, log=lambda m: None).chunks
    bm25 = build_retriever({"kind": "bm25", "backend": "fast"}, BuildContext(progress=False))
    bm25.index(chunks)
    by_id = {c.chunk_id: c for c in chunks}

    def search(path, body):
        if not path.startswith("/docs/_search"):
            return 404, {"error": {"type": "index_not_found_exception"}}
        text = body["query"]["match"]["text"]
        ranked = bm25.retrieve([Query("x", text)], body["size"])[0]
        return 200, {"took": 1, "hits": {"total": {"value": len(ranked.hits)}, "hits": [
            {"_index": "docs", "_id": h.chunk_id, "_score": h.score,
             "_source": {"chunk_id": h.chunk_id, "doc_id": by_id[h.chunk_id].doc_id}} for h in ranked.hits]}}
    return result, search


@pytest.mark.parametrize("kind", ["elasticsearch", "opensearch"])
def test_search_engine_connect_mode_against_a_fake(service, tmp_path, kind):
    expected, service.search = _bm25_search_fake(tmp_path)
    live = run({"kind": kind, "url": service.url, "index": "docs"}, tmp_path)
    _same_metrics(live, expected)
    req = service.requests[0]
    assert req["path"] == "/docs/_search" and req["payload"]["size"] == 20
    assert live.requests.sent == 46 and live.latency.measured == "per request"
    with pytest.raises(RetrieverError, match="HTTP 404"):
        run({"kind": kind, "url": service.url, "index": "other", "retries": 0}, tmp_path)


# ---- python ------------------------------------------------------------------------------------------------------

ADAPTER = '''
class Adapter:
    """A retriever as a user writes one: word overlap, hits as dicts with chunk ids."""
    def __init__(self, boost=1.0):
        self.boost = boost
    def index(self, chunks):
        self.chunks = [(c.chunk_id, c.doc_id, set(c.text.lower().split())) for c in chunks]
    def retrieve(self, texts, k):
        out = []
        for t in texts:
            words = set(t.lower().split())
            scored = sorted(((len(words & w) * self.boost, cid, did) for cid, did, w in self.chunks), reverse=True)
            out.append([{"chunk_id": c, "doc_id": d, "score": s} for s, c, d in scored[:k]])
        return out

def search(texts, k):
    return [[{"doc_id": "sync-bandwidth", "score": 1.0}] for t in texts]

def broken(texts, k):
    return [[{"doc_id": "sync-bandwidth"}] for t in texts]

def crash(texts, k):
    raise ValueError("boom")
'''


def test_python_class_and_function_targets(tmp_path):
    (tmp_path / "my_adapters_live.py").write_text(ADAPTER)
    got = run({"kind": "python", "target": "my_adapters_live:Adapter", "path": ".", "options": {"boost": 2.0}},
              tmp_path)
    # Independently: the same scoring, ranked by the tie rule, for the first query.
    q = got.queries[0]
    words = set(q.text.lower().split())
    scores = sorted(((len(words & set(t.lower().split())) * 2.0, cid) for cid, t in got.chunk_text.items()),
                    reverse=True)[:20]
    assert [(h.score, h.chunk_id) for h in q.hits] == scores
    fn = run({"kind": "python", "target": "my_adapters_live:search", "path": "."}, tmp_path)
    assert all(h.doc_id == "sync-bandwidth" for q in fn.queries for h in q.hits)  # whole document as one span
    with pytest.raises(RetrieverError, match="hit 0: no score at 'score'"):
        run({"kind": "python", "target": "my_adapters_live:broken", "path": "."}, tmp_path)
    with pytest.raises(RetrieverError, match=r"failed in retrieve: ValueError: boom \(at .*my_adapters_live.py:"):
        run({"kind": "python", "target": "my_adapters_live:crash", "path": "."}, tmp_path)


# ---- tantivy ----------------------------------------------------------------------------------------------------

def test_tantivy_bm25_ranks_like_our_bm25_mostly(tmp_path):
    pytest.importorskip("tantivy")
    ours = run({"kind": "bm25", "backend": "fast", "tokenizer": {"stemmer": "english"}}, tmp_path)
    theirs = run({"kind": "tantivy"}, tmp_path)
    overlap = [len({h.chunk_id for h in a.hits[:10]} & {h.chunk_id for h in b.hits[:10]}) / 10
               for a, b in zip(ours.queries, theirs.queries)]
    assert sum(overlap) / len(overlap) > 0.6  # different analyzers and idf: close, not equal
    assert theirs.summary.chunk["recall@20"] > 0.8
    # Query syntax in a question is text, not operators.
    from harness.core.types import Chunk, Document, Query
    from harness.retrievers import BuildContext, build_retriever
    r = build_retriever({"kind": "tantivy"}, BuildContext(progress=False))
    doc = Document("d", "AND OR: (weird) -text. plain words here.")
    r.index([Chunk.of_span(doc, 0, 20, False), Chunk.of_span(doc, 21, len(doc.text), False)])
    assert [h.chunk_id for h in r.retrieve([Query("q", 'weird:"AND (-text')], 5)[0].hits] == \
        [Chunk.of_span(doc, 0, 20, False).chunk_id]


# ---- config errors and latency gates through the CLI -------------------------------------------------------------

@pytest.mark.parametrize("retriever, fragments", [
    ("{kind: http, url: 'localhost:8000'}", ["retriever.url:", "not an http(s) URL"]),
    ("{kind: http, url: 'http://127.0.0.1:99999/search'}", ["retriever.url:", "port is not in 1-65535"]),
    ("{kind: http, url: 'http://bad host/search'}", ["retriever.url:", "not an http(s) URL"]),
    ("{kind: http, url: 'http://x', headers_env: {Authorization: NO_SUCH_VAR_LIVE}}",
     ["retriever.headers_env.Authorization: environment variable NO_SUCH_VAR_LIVE is not set"]),
    ("{kind: http, url: 'http://x', headers: {Authorization: abc}}", ["retriever.headers: Authorization:"]),
    ("{kind: http, url: 'http://x', response: {hits: 'a..b', score: ''}}",
     ["retriever.response.hits: 'a..b' is not a path", "retriever.response.score:"]),
    ("{kind: http, url: 'http://x', body: {q: fixed}}", ["body never uses {query}"]),
    ("{kind: elasticsearch, index: docs, query: {match_all: {}}}", ["retriever: query: expected a query DSL"]),
    ("{kind: python, target: nope}", ["retriever.target: 'nope': expected module:function"]),
    ("{kind: python, target: 'no_such_module_live:f'}", ["retriever.target: module 'no_such_module_live'"]),
    ("{kind: tantivy, heap_mb: 1}", ["retriever.heap_mb:"]),
])
def test_bad_live_configs_are_located_errors(tmp_path, retriever, fragments):
    cfg = demo_config(tmp_path, retriever=retriever)
    assert_input_error(harness("run", cfg, "--out", tmp_path / "out", cwd=tmp_path), *fragments)


def test_latency_is_in_the_result_report_and_gates(tmp_path):
    cfg = demo_config(tmp_path)
    proc = harness("run", cfg, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    lat = data["latency"]
    assert lat["queries"] == 46 and lat["measured"].startswith("per batch")
    assert lat["p50_ms"] <= lat["p95_ms"] <= lat["max_ms"] and lat["queries_per_s"] > 0
    assert "p95" in (tmp_path / "out" / "report.md").read_text()
    (tmp_path / "ok.yaml").write_text(f"rules:\n  - 'latency.p95_ms <= {lat['p95_ms'] + 1000}'\n")
    (tmp_path / "slow.yaml").write_text(f"rules:\n  - 'latency.p95_ms <= {lat['p95_ms'] / 2}'\n"
                                        f"  - 'latency.queries_per_s >= 0.1'\n")
    (tmp_path / "bad.yaml").write_text("rules:\n  - 'latency.p99_ms <= 3'\n")
    results = tmp_path / "out" / "results.json"
    assert harness("gate", results, "--rules", tmp_path / "ok.yaml", cwd=tmp_path).returncode == 0
    slow = harness("gate", results, "--rules", tmp_path / "slow.yaml", cwd=tmp_path)
    assert slow.returncode == 1 and "latency.p95_ms" in slow.stdout + slow.stderr
    assert_input_error(harness("gate", results, "--rules", tmp_path / "bad.yaml", cwd=tmp_path),
                       "rules.0:", "latency.p99_ms")


def test_without_httpx_the_standard_library_sends_the_same_requests(service, known_run, tmp_path, monkeypatch):
    from harness.retrievers import http_transport

    monkeypatch.setattr(http_transport, "_httpx", lambda: None)
    answers, path = known_run
    service.answers = answers
    texts = list(answers)
    service.script = {texts[0]: [503], texts[1]: ["slow", "slow"], texts[2]: ["garbage"]}
    service.slow_s = 1.0
    live = run({"kind": "http", "url": service.url, "retries": 1, "backoff_s": 0.01, "timeout_s": 0.3,
                "on_error": "skip"}, tmp_path)
    log = {r.query_id: r for r in live.requests.log}
    ids = [q.id for q in live.queries[:3]]
    assert (log[ids[0]].status, log[ids[0]].attempts, log[ids[0]].error) == (200, 2, None)
    assert (log[ids[1]].status, log[ids[1]].error) == (None, "timed out")
    assert log[ids[2]].error.startswith("the response is not JSON")
    assert live.requests.failed_query_ids == ids[1:3]
    full = run({"kind": "external", "path": str(path)}, tmp_path)
    keep = [i for i, q in enumerate(live.queries) if q.id not in ids[1:3]]
    assert [live.queries[i].metrics for i in keep] == [full.queries[i].metrics for i in keep]


def test_a_failing_service_exits_2_naming_each_query_through_the_cli(service, tmp_path):
    service.answers = {}
    service.script = {t: [500] * 3 for t in
                      (json.loads(line)["query"] for line in (DEMO / "goldset.jsonl").read_text().splitlines())}
    cfg = demo_config(tmp_path, retriever=f"{{kind: http, url: '{service.url}', retries: 1, backoff_s: 0.01}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", cwd=tmp_path)
    first = json.loads((DEMO / "goldset.jsonl").read_text().splitlines()[0])["id"]
    assert_input_error(proc, "retriever.kind 'http': the request failed for 46 of 46 queries",
                       f"query {first!r}: HTTP 500", "after 2 attempt(s)")
    assert not (tmp_path / "out" / "results.json").exists()


def test_concurrency_limits_requests_in_flight_and_latency_is_per_request(service, known_run, tmp_path):
    answers, _ = known_run
    service.answers, service.delay_s = answers, 0.05
    live = run({"kind": "http", "url": service.url, "concurrency": 3}, tmp_path)
    assert service.max_in_flight == 3  # never more than asked, and really concurrent
    assert live.latency.p50_ms >= 50 and live.latency.measured == "per request"
    # 46 requests of >= 50 ms, 3 at a time: at least 16 rounds, so the wall time is >= 0.8 s.
    assert live.latency.queries_per_s <= 46 / 0.8


# ---- repeated hits: dropped before the cut at depth, counted (a tester's walk, 7b) ----------------------------------

DUP_DOCS = [("d1", "Alpha text one."), ("d2", "Beta text two."), ("d3", "Gamma text."), ("d4", "Delta text four.")]


def _dup_files(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in DUP_DOCS))
    (tmp_path / "goldset.jsonl").write_text(json.dumps({"id": "q1", "query": "delta", "relevant": ["d4"]}) + "\n")
    return {"name": "dup", "corpus": {"path": str(tmp_path / "corpus.jsonl")},
            "goldset": {"path": str(tmp_path / "goldset.jsonl")}, "cutoff": {"k": 3}, "depth": 3,
            "metrics": ["recall@3"]}


def _dup_run(tmp_path, retriever):
    cfg = parse_config({**_dup_files(tmp_path), "retriever": retriever}, "t", tmp_path)
    return run_experiment(cfg, progress=False, log=lambda m: None)


def test_an_external_run_repeating_a_doc_keeps_depth_distinct_hits(tmp_path):
    # d1 twice, then d2 and d4; depth 3: as trec_eval (harness eval) does, d1 counts once, so d4 is within depth
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 3.0 s\nq1 Q0 d1 2 3.0 s\nq1 Q0 d2 3 2.0 s\nq1 Q0 d4 4 1.0 s\n")
    got = _dup_run(tmp_path, {"kind": "external", "path": "run.trec"})
    assert [h.doc_id for h in got.queries[0].hits] == ["d1", "d2", "d4"]
    assert got.summary.doc["recall@3"] == 1.0 and got.hit_problems.duplicates == 1
    (tmp_path / "qrels.txt").write_text("q1 0 d4 1\n")
    proc = harness("eval", tmp_path / "qrels.txt", tmp_path / "run.trec", "-m", "recall@3", "--format", "tsv")
    assert proc.returncode == 0 and proc.stdout.split() == ["recall@3", "all", "1.000000"]


REPEATS = '''
def repeats(texts, k):   # every hit three times: more than k items in all
    hits = [{"doc_id": d, "score": s} for d, s in [("d1", 3.0), ("d2", 2.0), ("d4", 1.0)]]
    return [[h for h in hits for _ in range(3)] for t in texts]
'''


def test_a_python_retriever_repeating_hits_keeps_depth_distinct_ones_counted(tmp_path):
    (tmp_path / "repeats_live.py").write_text(REPEATS)
    got = _dup_run(tmp_path, {"kind": "python", "target": "repeats_live:repeats", "path": "."})
    assert [h.doc_id for h in got.queries[0].hits] == ["d1", "d2", "d4"]
    assert got.summary.doc["recall@3"] == 1.0 and got.hit_problems.duplicates == 6


def test_repeats_of_a_child_inside_a_hybrid_are_counted(tmp_path):
    """hit_problems.duplicates read the top retriever only: an external child of a hybrid dropped its repeats
    uncounted (review)."""
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 3.0 s\nq1 Q0 d1 2 3.0 s\nq1 Q0 d2 3 2.0 s\nq1 Q0 d4 4 1.0 s\n")
    got = _dup_run(tmp_path, {"kind": "hybrid", "children": [{"kind": "external", "path": "run.trec"},
                                                             {"kind": "bm25", "backend": "fast"}]})
    assert got.hit_problems.duplicates == 1


def test_a_live_service_repeating_hits_has_them_counted(service, tmp_path):
    service.answers = {"delta": [{"doc_id": d, "score": s} for d, s in [("d1", 3.0), ("d2", 2.0), ("d4", 1.0)]]}
    service.shape = lambda hits: {"hits": [h for h in hits for _ in range(3)]}
    got = _dup_run(tmp_path, {"kind": "http", "url": service.url + "/s"})
    assert [h.doc_id for h in got.queries[0].hits] == ["d1", "d2", "d4"]
    assert got.summary.doc["recall@3"] == 1.0 and got.hit_problems.duplicates == 6


def test_rank_distinct_drops_repeats_before_the_cut_at_their_best_place():
    from harness.core.types import Hit
    from harness.retrievers.ranking import rank_distinct

    hits = [Hit("a", "d", 1.0, 0), Hit("b", "d", 3.0, 0), Hit("a", "d", 2.0, 0), Hit("b", "d", 3.0, 0),
            Hit("c", "d", 0.5, 0)]
    ranked, dropped = rank_distinct("q", hits, 3)
    assert [(h.chunk_id, h.score, h.rank) for h in ranked.hits] == [("b", 3.0, 1), ("a", 2.0, 2), ("c", 0.5, 3)]
    assert dropped == 2


# ---- scores no JSON number can hold -----------------------------------------------------------------------------------

@pytest.mark.parametrize("score", ["inf", "-inf", "1e400", "nan"])
def test_an_external_trec_run_with_an_infinite_score_is_refused_naming_its_line(tmp_path, score):
    run_file = tmp_path / "run.trec"
    run_file.write_text(f"q1 Q0 d1 1 3.0 s\nq1 Q0 d4 2 {score} s\n")
    cfg = demo_config(tmp_path, retriever=f"{{kind: external, path: {run_file}}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert_input_error(proc, f"run.trec:2: score '{score}' is not")
    assert not (tmp_path / "out" / "results.json").exists()
    (tmp_path / "qrels.txt").write_text("q1 0 d4 1\n")
    assert_input_error(harness("eval", tmp_path / "qrels.txt", run_file), f"run.trec:2: score '{score}' is not")


# ---- a python retriever's NumPy scores --------------------------------------------------------------------------------

NUMPY_SCORES = '''
import numpy as np

def scored(texts, k, make):
    hits = [("d1", 3.0), ("d2", 2.0), ("d4", 1.0)]
    return [[{"doc_id": d, "score": make(s)} for d, s in hits] for t in texts]

def f32(texts, k): return scored(texts, k, np.float32)
def i64(texts, k): return scored(texts, k, lambda s: np.int64(int(s)))
def f16(texts, k): return scored(texts, k, np.float16)
def plain(texts, k): return scored(texts, k, float)
def npbool(texts, k): return scored(texts, k, lambda s: np.bool_(True))
def pybool(texts, k): return scored(texts, k, lambda s: True)
def npnan(texts, k): return scored(texts, k, lambda s: np.float32("nan"))
def npinf(texts, k): return scored(texts, k, lambda s: np.float64("inf"))
def text(texts, k): return scored(texts, k, str)
'''


@pytest.mark.parametrize("target", ["f32", "i64", "f16"])
def test_a_python_retriever_may_score_with_numpy_scalars(tmp_path, target):
    (tmp_path / "npscores_live.py").write_text(NUMPY_SCORES)
    got = _dup_run(tmp_path, {"kind": "python", "target": f"npscores_live:{target}", "path": "."})
    want = _dup_run(tmp_path, {"kind": "python", "target": "npscores_live:plain", "path": "."})
    assert [(h.doc_id, h.score, type(h.score)) for h in got.queries[0].hits] == \
        [(h.doc_id, h.score, float) for h in want.queries[0].hits]
    assert got.summary.doc == want.summary.doc


@pytest.mark.parametrize("target, message", [
    ("npbool", "score np.True_ at 'score' is not a number"), ("pybool", "score True at 'score' is not a number"),
    ("npnan", "score np.float32(nan) at 'score' is not a finite number"),
    ("npinf", "score np.float64(inf) at 'score' is not a finite number"),
    ("text", "score '3.0' at 'score' is not a number"),
])
def test_a_python_retrievers_score_that_is_no_finite_number_is_refused_truly(tmp_path, target, message):
    (tmp_path / "npscores_live.py").write_text(NUMPY_SCORES)
    with pytest.raises(RetrieverError) as exc:
        _dup_run(tmp_path, {"kind": "python", "target": f"npscores_live:{target}", "path": "."})
    assert f"query 'q1', hit 0: {message}" in exc.value.problems


# ---- Ctrl-C and SIGTERM while requests hang ----------------------------------------------------------------------------

@pytest.mark.parametrize("signum, code", [(2, 130), (15, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_run_at_once_while_requests_hang(service, tmp_path, signum, code):
    import os
    import signal
    import subprocess

    from clihelp import ROOT
    from harness.core.interrupt import MESSAGE

    service.delay_s = 30.0  # every request hangs (the client's timeout is longer)
    cfg = demo_config(tmp_path, retriever=f"{{kind: http, url: '{service.url}/s', timeout_s: 120, concurrency: 4}}")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main", "run", str(cfg), "--out", str(tmp_path / "out"),
                             "-q"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while service.in_flight < 4:  # four requests sent and waiting
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
            time.sleep(0.05)
        proc.send_signal(signum)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert waited < 5, f"exited {waited:.1f} s after the signal (requests in flight were waited for)"
    assert err.strip().splitlines()[-1] == MESSAGE and "Traceback" not in err
    assert not (tmp_path / "out" / "results.json").exists()
