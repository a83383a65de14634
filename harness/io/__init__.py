"""One reader per file format: TREC and JSONL runs (fast pyarrow path inside), corpora (JSONL, folders,
BEIR). In: paths. Out: core types (Documents, Run, Qrels).
"""
