"""pytrec_eval in a child process: after several evaluator instances in one process it can hang (seen here), so
randomized differential tests give each example its own process and a timeout."""

import multiprocessing as mp


def _evaluate(qrels, run, measures, queue):
    import pytrec_eval
    queue.put(pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run))


def reference(qrels, run, measures, timeout: float = 30.0):
    """pytrec_eval's per-query values, or None if the child did not answer in time."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_evaluate, args=(qrels, run, list(measures), queue), daemon=True)
    proc.start()
    try:
        return queue.get(timeout=timeout)
    except Exception:
        return None
    finally:
        proc.kill()
        proc.join()
