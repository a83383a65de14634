"""The Ray executor gives the local executor's Result (per-query metrics, verdicts, hit lists; timings aside), on a
real local Ray started once for the module; Ray Data's embeddings land in the cache a later local run reuses; dense
shards merge to the unsharded ranking; without Ray, ``kind: ray`` is one line naming the extra."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

from clihelp import ROOT, assert_input_error, demo_config, harness
from conftest import SHARED, require_installed

from harness.config.schema import load_config
from harness.core.errors import ConfigError, MissingDependencyError
from harness.pipeline.assemble import run_experiment
from harness.retrievers import BuildContext

require_installed("ray")  # imported by the fixture: `import ray` alone is ~1 s of every collection


@pytest.fixture(scope="module")
def worker_tmp() -> Iterator[Path]:
    """The workers' TMPDIR: what a backend makes in a temporary folder on an actor lands here, where a test can
    see it (and tell it from another process's). Not under pytest's base folder: another pytest session on the
    machine prunes old ones, and a PostgreSQL data folder vanished there mid-start."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="harness-rayt-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def local_ray(worker_tmp):
    import ray

    from harness.executors.ray_session import local_init_args

    args = local_init_args()
    args["runtime_env"]["env_vars"]["TMPDIR"] = str(worker_tmp)
    # A cluster named by RAY_ADDRESS (or started with `ray start` on this machine) is not joined: address: local
    # is a private Ray. Without address "local" in the arguments ray.init went to this address and failed.
    import os

    before = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = "127.0.0.1:9"
    try:
        ray.init(**dict(args, num_cpus=2))
    finally:
        if before is None:
            del os.environ["RAY_ADDRESS"]
        else:
            os.environ["RAY_ADDRESS"] = before
    yield ray
    ray.shutdown()


def _with(config, **executor):
    return config.model_copy(update={"executor": config.executor.model_copy(update=executor)})


def _run(config, cache: Path):
    return run_experiment(config, progress=False, log=lambda m: None,
                          context=BuildContext(cache_dir=cache, progress=False))


def _same(local, remote) -> None:
    """Identical per-query metrics, verdicts and hit lists (scores bit for bit), and the same summary."""
    assert [q.id for q in remote.queries] == [q.id for q in local.queries]
    for a, b in zip(local.queries, remote.queries):
        assert b.metrics == a.metrics, a.id
        assert b.verdict == a.verdict, a.id
        assert b.hits == a.hits, a.id
    assert remote.summary == local.summary
    assert remote.config_hash == local.config_hash
    assert remote.hit_problems == local.hit_problems


def test_bm25_demo_same_result_as_local(local_ray, tmp_path):
    config = load_config(ROOT / "configs" / "demo-bm25.yaml")
    local = _run(config, tmp_path / "cache")
    remote = _run(_with(config, kind="ray", num_workers=2, batch_size=8), tmp_path / "cache")
    _same(local, remote)
    assert local.executor.kind == "local" and remote.executor.kind == "ray"
    assert remote.executor.workers == 2 and remote.executor.batch_size == 8
    # This BM25 retriever either pickles (shipped to the workers) or is rebuilt in each from its config.
    assert remote.executor.placement in ("shipped", "rebuilt")
    assert set(remote.timings.stages) >= {"start_s", "encode_s", "index_s", "retrieve_s"}
    assert remote.timings.stages["start_s"] == 0.0 or remote.timings.stages["start_s"] < 5  # Ray already running


def test_bm25_shards_merge_or_are_refused(local_ray, tmp_path):
    from harness.core.errors import RetrieverError

    # backend: fast shards with the whole corpus's idf and average length: the merged lists are the local ones
    config = load_config(ROOT / "configs" / "demo-bm25.yaml", ["retriever.backend=fast"])
    remote = _run(_with(config, kind="ray", shards=3), tmp_path / "cache")
    assert remote.executor.placement == "sharded" and remote.executor.shards == 3
    _same(_run(config, tmp_path / "cache"), remote)
    # rank_bm25 keeps no arrays to slice: one line saying which backend can
    plain = load_config(ROOT / "configs" / "demo-bm25.yaml")
    with pytest.raises(RetrieverError, match=r"executor.shards: only bm25 with backend: fast can be sharded"):
        _run(_with(plain, kind="ray", shards=3), tmp_path / "cache")
    # more slices than chunks: empty slices and an actor each (200 of them took Ray minutes to start)
    with pytest.raises(ConfigError, match=r"executor.shards: 200 slices of 79 chunks; give at most 79"):
        _run(_with(config, kind="ray", shards=200), tmp_path / "cache")


@pytest.mark.slow  # two cold encodes (local and Ray Data) of the demo: ~100 s on 2 shared cores
def test_dense_encoded_by_ray_data_sharded_and_reused_by_local(local_ray, tmp_path, monkeypatch, capfd):
    pytest.importorskip("sentence_transformers")
    config = load_config(ROOT / "configs" / "demo-dense.yaml")
    local = _run(config, tmp_path / "local-cache")
    capfd.readouterr()
    remote = _run(_with(config, kind="ray", shards=2, num_workers=1), tmp_path / "ray-cache")
    # Ray Data's INFO lines and its note that progress bars are off are not the run's to print (they showed under -q)
    err = capfd.readouterr().err
    assert "streaming_executor" not in err and "Progress bars disabled" not in err, err[-2000:]
    assert remote.executor.placement == "sharded" and remote.executor.shards == 2
    assert remote.timings.stages["encode_s"] > 0
    # Same batches as the local encoder, so the same vectors; flat slices merged by the tie rule: the same lists.
    _same(local, remote)
    # A later local run finds every embedding Ray Data wrote (chunks, and the queries in the batches the local
    # run makes): it never loads the model.
    from harness.retrievers import encoders

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded: the embeddings Ray wrote were not reused")

    monkeypatch.setattr(encoders, "load_sentence_transformer", no_model)
    _same(local, _run(config, tmp_path / "ray-cache"))


@pytest.mark.slow  # two cold encodes of the demo (local, and Ray Data in a task)
def test_a_ray_client_driver_encodes_in_a_task_on_the_cluster(local_ray, tmp_path, monkeypatch):
    """A Ray Client driver (address: ray://head:10001) has no core worker, and Ray Data's executor needs one: a
    dense run there was a traceback ("'Worker' object has no attribute 'core_worker'"). The encoding runs in a
    task on the cluster instead, with the same batches: the same cache entries and the same Result."""
    pytest.importorskip("sentence_transformers")
    from harness.executors import ray_encode

    assert not ray_encode.client_mode(local_ray)  # a driver started by ray.init has its own core worker
    config = load_config(ROOT / "configs" / "demo-dense.yaml")
    local = _run(config, tmp_path / "local-cache")

    def in_the_driver(*args, **kwargs):
        raise AssertionError("Ray Data ran in the Ray Client driver")

    # What a client driver is told; the task's worker imports its own ray.data, so only the driver's is broken.
    monkeypatch.setattr(ray_encode, "client_mode", lambda ray: True)
    monkeypatch.setattr(local_ray.data, "from_items", in_the_driver)
    remote = _run(_with(config, kind="ray", num_workers=1), tmp_path / "ray-cache")
    assert remote.timings.stages["encode_s"] > 0
    _same(local, remote)
    files = sorted(p.relative_to(tmp_path / "ray-cache") for p in (tmp_path / "ray-cache").rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(tmp_path / "local-cache")
                                     for p in (tmp_path / "local-cache").rglob("*") if p.is_file())
    for name in files:
        assert (tmp_path / "ray-cache" / name).read_bytes() == (tmp_path / "local-cache" / name).read_bytes()


def test_hybrid_demo_same_result_as_local(local_ray, tmp_path):
    pytest.importorskip("sentence_transformers")
    config = load_config(ROOT / "configs" / "demo-hybrid.yaml")
    cache = tmp_path / "cache"
    local = _run(config, cache)
    remote = _run(_with(config, kind="ray", num_workers=2), cache)
    _same(local, remote)  # the verdicts' stage ladders and lost_at counts too: the stages travel with the hits
    checkable = [q for q in remote.queries if q.verdict.kind not in ("goldset_error", "no_gold")]
    assert checkable and all([s["path"] for s in q.verdict.detail["stages"]] == [
        "hybrid/bm25", "hybrid/dense", "hybrid/fusion"] for q in checkable)
    assert remote.summary.verdicts.lost_at is not None
    with pytest.raises(ConfigError, match="retriever.kind 'hybrid' cannot be sharded"):
        _run(_with(config, kind="ray", shards=2), cache)


def _scifact() -> Path:
    for root in (SHARED, ROOT.parent.parent / "shared" / "datasets"):  # beside the checkout, or a worktree's
        if (root / "scifact").is_dir():
            return root / "scifact"
    pytest.skip("shared/datasets/scifact is not present")


def test_scifact_bm25_same_result_as_local(local_ray, tmp_path):
    data = _scifact()
    config = load_config(ROOT / "configs" / "scifact-bm25.yaml")
    config = config.model_copy(update={
        "corpus": config.corpus.model_copy(update={"path": data}),
        "goldset": config.goldset.model_copy(update={"path": data, "evidence": data / "evidence_test.jsonl"})})
    local = _run(config, tmp_path / "cache")
    remote = _run(_with(config, kind="ray", num_workers=2, batch_size=64), tmp_path / "cache")
    _same(local, remote)
    assert len(remote.queries) == 300


def test_without_ray_kind_ray_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` does when Ray is not installed
    config = _with(load_config(ROOT / "configs" / "demo-bm25.yaml"), kind="ray")
    with pytest.raises(MissingDependencyError) as err:
        _run(config, tmp_path / "cache")
    assert str(err.value) == "executor.kind 'ray' needs Ray: pip install 'rag-harness[ray]'"


def test_without_ray_validate_names_the_extra_before_any_work(monkeypatch):
    from harness.pipeline.assemble import check_before_retrieval

    monkeypatch.setitem(sys.modules, "ray", None)
    config = _with(load_config(ROOT / "configs" / "demo-bm25.yaml"), kind="ray")
    with pytest.raises(MissingDependencyError, match=r"rag-harness\[ray\]"):
        check_before_retrieval(config, source="demo-bm25.yaml")
    check_before_retrieval(_with(config, kind="local"), source="demo-bm25.yaml")  # local needs no Ray


def test_executor_for_picks_the_executor_the_config_names():
    from harness.executors import executor_for
    from harness.executors.local import LocalExecutor
    from harness.executors.ray import RayExecutor

    config = load_config(ROOT / "configs" / "demo-bm25.yaml")
    assert type(executor_for(config)) is LocalExecutor
    remote = executor_for(_with(config, kind="ray", num_workers=3))
    assert type(remote) is RayExecutor and remote.config.executor.num_workers == 3


def test_validate_takes_the_executor_option(tmp_path):
    proc = harness("validate", demo_config(tmp_path), "--executor", "ray", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ok (" in proc.stdout
    assert_input_error(harness("validate", demo_config(tmp_path), "--executor", "dask", cwd=tmp_path), "--executor")


def test_ctrl_c_while_a_private_ray_starts_stops_what_it_started():
    """Ctrl-C inside ray.init (its Node() starting the GCS, the raylet and the raylet's agents) left the agents
    behind as orphans for a minute: Ray had not kept the node yet, so nothing stopped it. The start now finishes,
    then the interrupt stops the Ray it started."""
    import os
    import signal

    from harness.config.schema import ExecutorConfig
    from harness.executors import ray_session

    class StartingRay:
        calls: list[str] = []

        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, halfway through the start
            StartingRay.calls.append("started")

        @staticmethod
        def shutdown():
            StartingRay.calls.append("shutdown")

    # Ctrl-C raises as in a terminal, even where the suite was started with SIGINT ignored (a background job)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            ray_session.start_ray(StartingRay, ExecutorConfig(kind="ray", address="local"))
    finally:
        signal.signal(signal.SIGINT, before)
    assert StartingRay.calls == ["started", "shutdown"]


@pytest.mark.parametrize("address", ["ray://head:10001", "ray://10.0.0.1:10001", "ray://[::1]:10001"])
def test_a_ray_client_address_with_host_and_port_is_accepted(tmp_path, address):
    proc = harness("validate", demo_config(tmp_path, executor=f"{{kind: ray, address: '{address}'}}"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_ray_client_that_cannot_connect_names_token_authentication(monkeypatch):
    """Ray's client sends no token unless RAY_AUTH_MODE=token: at a cluster asking for one (its head has a token,
    which any earlier private Ray on that machine writes) it timed out as if nothing listened, and the line said
    only "start one"."""
    from harness.config.schema import ExecutorConfig
    from harness.executors import ray_session

    class NoCluster:
        @staticmethod
        def init(**kwargs):
            raise ConnectionError("ray client connection timeout")

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    with pytest.raises(ConfigError) as err:
        ray_session._init(NoCluster, ExecutorConfig(kind="ray", address="ray://head:10001"))
    assert "ray client connection timeout" in str(err.value) and "RAY_AUTH_MODE=token" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError) as err:  # address: auto joins as a core worker, which finds the token itself
        ray_session._init(NoCluster, ExecutorConfig(kind="ray", address="auto"))
    assert "RAY_AUTH_MODE" not in str(err.value)


@pytest.mark.parametrize("section, fragments", [
    ("{kind: spark}", ["executor.kind: Input should be 'local' or 'ray'"]),
    ("{kind: ray, address: 10.0.0.1:6379, num_workers: 0, shards: -1}",
     ["executor.address: expected 'local', 'auto' or 'ray://host:port'", "executor.num_workers:",
      "executor.shards:"]),
    ("{kind: ray, workers: 2}", ["executor.workers: unknown key; did you mean 'num_workers'?"]),
    # a Ray Client address without its port (or host): Ray waited 30 s, then "ray client connection timeout"
    ("{kind: ray, address: 'ray://127.0.0.1'}", ["executor.address: expected 'local', 'auto' or 'ray://host:port'"]),
    ("{kind: ray, address: 'ray://'}", ["executor.address: expected 'local', 'auto' or 'ray://host:port'"]),
    ("{kind: ray, address: 'ray://:10001'}", ["executor.address: expected 'local', 'auto' or 'ray://host:port'"]),
    ("{kind: ray, address: 'ray://head:0'}", ["executor.address: expected 'local', 'auto' or 'ray://host:port'"]),
])
def test_bad_executor_section_is_located(tmp_path, section, fragments):
    proc = harness("validate", demo_config(tmp_path, executor=section), cwd=tmp_path)
    assert_input_error(proc, "cfg.yaml", *fragments)


def test_executor_option_is_a_choice(tmp_path):
    proc = harness("run", demo_config(tmp_path), "--executor", "dask", cwd=tmp_path)
    assert_input_error(proc, "--executor")


def test_a_live_retriever_sends_its_requests_from_the_driver(local_ray, tmp_path):
    """An http retriever on Ray: its requests, which queries it answered and their latencies are the state of the
    one object that sent them. Run on the actors, the driver saw none of it and scored every query absent (0)."""
    from test_backends_live import Service

    config = load_config(ROOT / "configs" / "demo-bm25.yaml")
    bm25 = _run(config, tmp_path / "cache")
    service = Service()
    try:
        service.answers = {q.text: [{"chunk_id": h.chunk_id, "score": h.score} for h in q.hits]
                           for q in bm25.queries}
        live = config.model_copy(update={"retriever": {"kind": "http", "url": service.url + "/s"}})
        local = _run(live, tmp_path / "cache")
        notes = []
        remote = run_experiment(_with(live, kind="ray", num_workers=2), progress=False, log=notes.append,
                                context=BuildContext(cache_dir=tmp_path / "cache", progress=False))
    finally:
        service.stop()
    _same(local, remote)
    assert remote.summary.doc == bm25.summary.doc and remote.summary.doc["ndcg@10"] > 0.5
    assert remote.requests.sent == len(remote.queries) and remote.latency.measured == "per request"
    assert remote.executor.placement == "driver" and any("live service" in n for n in notes)
    with pytest.raises(ConfigError, match="executor.shards"):
        run_experiment(_with(live, kind="ray", shards=2), progress=False, log=lambda m: None)


def _postgres_under(folder: Path) -> list[int]:
    """PIDs of the PostgreSQL servers whose data folder is under ``folder``."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"-D" in cmd[:-1] and cmd[cmd.index(b"-D") + 1].decode(errors="replace").startswith(str(folder)):
            pids.append(int(proc.name))
    return pids


def test_pgvector_workers_stop_their_servers(local_ray, worker_tmp, tmp_path, monkeypatch):
    """pgvector cannot be pickled, so each actor starts its own PostgreSQL (pgserver, a temporary folder): the run
    stops every one and removes its folder, as the local run's retriever.close() does (ray.kill runs no exit
    handler: two servers were left running with num_workers: 2)."""
    import os
    import signal
    import tempfile

    pytest.importorskip("pgserver")
    pytest.importorskip("sentence_transformers")
    monkeypatch.setattr(tempfile, "tempdir", str(worker_tmp))  # the driver's own server too
    config = load_config(ROOT / "configs" / "demo-pgvector.yaml")
    try:
        remote = _run(_with(config, kind="ray", num_workers=2), tmp_path / "cache")
        assert remote.executor.placement == "rebuilt"
        assert _postgres_under(worker_tmp) == []
        assert [p.name for p in worker_tmp.glob("harness-pg-*")] == []
    finally:  # a failed assertion leaves nothing running either
        for pid in _postgres_under(worker_tmp):
            os.kill(pid, signal.SIGINT)


def test_a_python_retriever_imports_from_its_path_on_the_workers(local_ray, tmp_path):
    """kind: python's path: (the folder beside the config) is on the actors' import path too: the shipped
    retriever's class is unpickled there. It was not, and a run from any other folder died with
    ModuleNotFoundError in the actor."""
    from harness.config.schema import parse_config

    adapters = tmp_path / "adapters"
    adapters.mkdir()
    (adapters / "rayt_overlap.py").write_text(
        "class Overlap:\n"
        "    def index(self, chunks):\n"
        "        self.chunks = [(c.chunk_id, set(c.text.lower().split())) for c in chunks]\n"
        "    def retrieve(self, texts, k):\n"
        "        out = []\n"
        "        for t in texts:\n"
        "            w = set(t.lower().split())\n"
        "            top = sorted(((len(w & s), cid) for cid, s in self.chunks), reverse=True)[:k]\n"
        "            out.append([{'chunk_id': cid, 'score': float(s)} for s, cid in top for _ in (1, 2)])\n"
        "        return out\n")
    demo = ROOT / "goldsets" / "demo"
    config = parse_config({"name": "pyray", "corpus": {"path": str(demo / "corpus.jsonl")},
                           "chunking": {"strategy": "sentences", "size": 2},
                           "goldset": {"path": str(demo / "goldset.jsonl")}, "cutoff": {"k": 5},
                           "retriever": {"kind": "python", "target": "rayt_overlap:Overlap", "path": "adapters"}},
                          "t", tmp_path)
    local = _run(config, tmp_path / "cache")
    remote = _run(_with(config, kind="ray", num_workers=2, batch_size=8), tmp_path / "cache")
    assert remote.executor.placement == "shipped"
    _same(local, remote)  # every hit given twice: the dropped repeats are counted on the workers as here
    assert local.hit_problems.duplicates > 0


def test_a_framework_retriever_is_rebuilt_by_its_factory_in_each_actor(local_ray, tmp_path):
    """kind: langchain (likewise llamaindex, haystack): the framework's objects are not shipped; each actor imports
    the factory from path: and calls it again. The same lists as the local run."""
    pytest.importorskip("langchain_community")
    pytest.importorskip("rank_bm25")
    from harness.config.schema import parse_config

    demo = ROOT / "goldsets" / "demo"
    config = parse_config({"name": "lcray", "corpus": {"path": str(demo / "corpus.jsonl")},
                           "chunking": {"strategy": "sentences", "size": 2},
                           "goldset": {"path": str(demo / "goldset.jsonl")}, "cutoff": {"k": 5},
                           "retriever": {"kind": "langchain", "factory": "framework_factories:langchain_bm25",
                                         "path": str(ROOT / "tests" / "retrievers")}}, "t", tmp_path)
    local = _run(config, tmp_path / "cache")
    remote = _run(_with(config, kind="ray", num_workers=2, batch_size=8), tmp_path / "cache")
    assert remote.executor.placement == "rebuilt"
    _same(local, remote)
    skipping = config.model_copy(update={"retriever": {**config.retriever, "on_error": "skip"}})
    with pytest.raises(ConfigError, match="on_error: skip with retriever.kind 'langchain' needs the local executor"):
        _run(_with(skipping, kind="ray", num_workers=2), tmp_path / "cache")


def test_more_shards_than_chunks_is_said_before_ray_starts(tmp_path, monkeypatch):
    """validate (which chunks the corpus) and run say it, naming the config file, before Ray is started: run
    started Ray (~7 s) and then failed with a line naming no file; validate said ok."""
    from harness.executors import ray as ray_executor

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started")

    monkeypatch.setattr(ray_executor, "start_ray", no_ray)
    cfg = demo_config(tmp_path, executor="{kind: ray, shards: 100}", retriever="{kind: bm25, backend: fast}")
    for args in (["validate", cfg], ["run", cfg, "--out", tmp_path / "out", "-q"]):
        proc = harness(*args, cwd=tmp_path)
        assert_input_error(proc, f"{cfg}: executor.shards: 100 slices of 79 chunks; give at most 79")
    assert not (tmp_path / "out").exists()


def test_ray_encode_actors_encode_with_the_drivers_backend_and_quantize(tmp_path):
    """Ray's encode actors were built with the model's name alone: a run with backend onnx, openvino or torch int8
    filled that backend's cache entries with torch fp32 vectors. The actor now encodes as the driver's encoder does
    (the actor is called here as Ray Data calls it, in this process)."""
    pytest.importorskip("sentence_transformers")
    import numpy as np

    from harness.executors.ray_encode import EncodeActor, actor_arguments
    from harness.retrievers.encoders import BUNDLED, Encoder

    texts = ["int8 products move the vectors a little", "torch fp32 is the reference", "a third passage"]
    driver = Encoder(BUNDLED, None, batch_size=2, backend="torch", quantize="int8", export_root=tmp_path)
    arguments = actor_arguments(driver, threads=1, gpu=False)
    assert (arguments["backend"], arguments["quantize"]) == ("torch", "int8")
    row = EncodeActor(**arguments)({"item": [0], "texts": [texts], "prefix": [""], "normalize": [True]})
    from_actor = np.frombuffer(row["vectors"][0], dtype=np.float32).reshape(-1, int(row["dim"][0]))
    int8 = driver._encode(texts, "", True, False)
    fp32 = Encoder(BUNDLED, None, batch_size=2)._encode(texts, "", True, False)
    assert np.array_equal(from_actor, int8)
    assert not np.array_equal(from_actor, fp32)
