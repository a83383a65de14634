"""The Result of a run: the typed model of results.json, its consistency checks, writing it a record at a time and
reading it back, the per-query store and columns that keep a large run bounded, which queries an output carries in
full, and the typed outcomes of compare and gate.
In: metric tables, verdicts and hits from the pipeline. Out: a Result (and results.json) for stats and renderers.
"""
