"""A run's hits: held as columns (the hit table), judged against the golden set's evidence, one level's grades, where a
query stands in a list, and the Parquet hits file with its index.
In: ranked lists from an executor and the golden set. Out: judged hits for metrics, diagnostics and writers.
"""
