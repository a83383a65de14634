"""``harness eval`` on files a run wrote: why its mean can differ from the run's own."""

from __future__ import annotations

from pathlib import Path

# The run file a run writes beside its results.json at document level (chunk level is run.chunks.trec).
DOC_RUN = "run.trec"


def run_folder_note(run_file: Path, table) -> str | None:
    """A note when ``run_file`` is the run.trec of a run's folder and eval counted other queries than that run
    did (the run leaves out golden-set errors: judgments it could not check against its corpus, which qrels alone
    cannot know). None when the file is not a run's, or the two counted the same queries."""
    results = run_file.parent / "results.json"
    if run_file.name != DOC_RUN or not results.is_file():
        return None
    from ..core.errors import HarnessError
    from ..result import querycolumns
    from ..result.read import load_result

    try:
        result = load_result(results)
    except (HarnessError, OSError):
        return None  # not readable as a results.json: nothing to say about it
    columns = querycolumns.of(result)
    counted_there = {q for q, c in zip(columns.ids, columns.counted["doc"].tolist()) if c}
    counted_here = {q for q, c in zip(table.query_ids, table.included.tolist()) if c}
    here_only, there_only = counted_here - counted_there, counted_there - counted_here
    if not here_only and not there_only:
        return None
    counts = result.summary.counts.doc
    errors = set(counts.excluded_goldset_error_query_ids) & here_only
    parts = []
    if errors:
        shown = ", ".join(sorted(errors)[:5]) + (" ..." if len(errors) > 5 else "")
        parts.append(f"{len(errors)} {'is a golden-set error' if len(errors) == 1 else 'are golden-set errors'} in "
                     f"the run ({shown}), judgments it could not check against its corpus, which the qrels alone "
                     f"cannot know")
    if len(here_only) > len(errors):
        parts.append(f"{len(here_only) - len(errors)} not counted by the run for another reason (are the qrels the "
                     f"run's golden set?)")
    means = table.mean()
    theirs = result.summary.means("doc")
    differ = [f"{m} {means[m]:.4f} here, {theirs[m]:.4f} in the run" for m in means
              if m in theirs and means[m] is not None and theirs[m] is not None and means[m] != theirs[m]]
    text = (f"note: {run_file} was written by harness run {result.name!r} (its results.json is beside it), whose "
            f"means count other queries: {len(here_only)} counted here and not there"
            + (f": {'; '.join(parts)}" if parts else "")
            + (f", {len(there_only)} there and not here" if there_only else "")
            + (f"; so the means differ: {', '.join(differ[:3])}" if differ else ""))
    return text
