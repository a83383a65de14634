"""Connecting to Ray (or starting a private one on this machine) and the resources every actor asks for.

Ray is imported only here, and only when a config asks for ``executor: {kind: ray}``. Resources are explicit: on a
small machine Ray's default layout deadlocks (the actors take every CPU and the task that feeds them never runs),
so every actor asks for a fraction of the CPUs and sets its torch threads to match."""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

from ..config.schema import ExecutorConfig
from ..core.errors import ConfigError, HarnessError, MissingDependencyError

INSTALL = "pip install 'rag-harness[ray]'"
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this copy of the harness package


def import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise MissingDependencyError(f"executor.kind 'ray' needs Ray: {INSTALL}") from None
    return ray


def local_init_args() -> dict:
    """``ray.init`` arguments for a private Ray on this machine: every CPU, no dashboard, bound to the loopback
    address where Ray lets us choose, and workers importing the same harness as the driver."""
    path = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    # address "local": without it ray.init joins a cluster started on this machine (`ray start`) or named by
    # RAY_ADDRESS, and then refuses num_cpus; a private Ray is what address: local promises.
    return {"address": "local", "num_cpus": os.cpu_count() or 1, "include_dashboard": False,
            "_node_ip_address": "127.0.0.1", "log_to_driver": False, "logging_level": logging.ERROR,
            "runtime_env": {"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}}}


def start_ray(ray, ex: ExecutorConfig) -> bool:
    """Connect to (or start) Ray; True when this call started it (then the run shuts it down)."""
    if ray.is_initialized():
        return False
    from ..core.interrupt import deferred

    with _our_sigterm():
        try:
            # A private Ray's start is not interrupted halfway: Ctrl-C there (inside ray.init's Node(), before Ray
            # keeps the node it started) left the raylet's agents (DashboardAgent, RuntimeEnvAgent) behind, orphans
            # for about a minute. Held until the start ends (seconds), the signal then stops the Ray it started.
            with deferred() if ex.address == "local" else nullcontext():
                _init(ray, ex)
        except BaseException:
            try:
                ray.shutdown()  # whatever ray.init started (nothing when connecting failed)
            except Exception:  # noqa: BLE001 - the error that stopped the start is the one to report
                pass
            raise
    return True


@contextmanager
def _our_sigterm() -> Iterator[None]:
    """Keep harness's SIGTERM handler (core.interrupt: cleanup, "interrupted", exit 143) across ``ray.init``: Ray's
    core installs its own C handler in the driver, which dumped a stack and aborted (exit 134) mid-run, leaving the
    output folder's lock behind."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if ours is not None:
            signal.signal(signal.SIGTERM, ours)


def _init(ray, ex: ExecutorConfig) -> None:
    if ex.address == "local":
        ray.init(**local_init_args())
        return
    # An existing cluster gets this package's code with the job; its dependencies (and a model folder named
    # by path) must be installed on the nodes, or given in a runtime_env by ``ray.init`` before the run.
    try:
        ray.init(address=ex.address, log_to_driver=False, runtime_env={"py_modules": [str(Path(PACKAGE_ROOT) /
                                                                                             "harness")]})
    except (ConnectionError, TimeoutError, ValueError) as exc:  # no cluster there: the config's address is wrong
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"executor.address {ex.address!r}: cannot connect to a Ray cluster there ({first}); "
                          f"start one (`ray start --head`), give its address, or use address: local for a "
                          f"private Ray on this machine{_client_auth_hint(ex.address)}") from None


def _client_auth_hint(address: str) -> str:
    """What else a Ray Client address needs: Ray's client sends no token unless told to, and a cluster whose head
    has a token (``~/.ray/auth_token``, written by any earlier private ``ray.init`` on that machine, or
    RAY_AUTH_MODE=token) asks for one, so its proxy drops the client's calls and the client says only "ray client
    connection timeout", as for an address where nothing listens."""
    if not address.startswith("ray://") or os.environ.get("RAY_AUTH_MODE"):
        return ""
    return ("; if the cluster uses token authentication (its head has ~/.ray/auth_token, which any earlier "
            "private Ray on that machine writes), set RAY_AUTH_MODE=token and give its token "
            "(~/.ray/auth_token or $RAY_AUTH_TOKEN)")


@contextmanager
def session(ex: ExecutorConfig) -> Iterator[None]:
    """Ray connected (or started) for the runs inside, and shut down after them if this started it: a sweep's
    points share one Ray instead of starting and stopping one each (seconds apiece)."""
    ray = import_ray()
    started = start_ray(ray, ex)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def cpus_per_actor(ray, actors: int) -> float:
    # One CPU stays free for Ray Data's read tasks and the driver's own work; the rest is shared by the actors.
    total = float(ray.cluster_resources().get("CPU", 1.0))
    return round(min(1.0, max(total - 1.0, total / 2.0) / max(actors, 1)), 3)


def set_threads(threads: int) -> None:
    """Match torch's threads to the actor's CPUs, if torch is loaded (a BM25 actor never imports it: 10-30 s)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def get_raising(ray, refs):
    """``ray.get``; an error raised in a worker is raised here as itself (a located harness error stays one line)."""
    from ray.exceptions import RayTaskError

    try:
        return ray.get(refs)
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, (HarnessError, MemoryError)):
            raise cause from None
        raise
