"""Golden sets: native JSONL/YAML, BEIR and TREC loaders, quotes resolved to spans, checked against the
corpus. In: a GoldsetConfig and the documents. Out: a GoldSet and its problems.
"""
