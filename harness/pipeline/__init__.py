"""One experiment end to end: prepare (config -> corpus, chunks, gold), execute (a retriever over query
batches), assemble (ranked lists -> metrics -> verdicts -> Result), sweeps.
In: an ExperimentConfig. Out: a Result.
"""
