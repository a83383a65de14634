"""The metric engine: metric declarations and names (spec), the run x qrels join and one vectorised
kernel per family (engine). In: Qrels and a columnar Run. Out: a MetricTable.
"""
