"""Golden sets: native JSONL/YAML, BEIR, TREC and tabular loaders, quotes resolved to spans and checked against the
corpus; and the golden set's life after it is written: build one from answers, check it against a changed corpus and
repair it, pool unjudged hits for people to judge and merge their judgments back, and describe it (stats).
In: golden-set files, a corpus, results.json files. Out: a GoldSet and its problems, golden-set files, judging sheets.
"""
