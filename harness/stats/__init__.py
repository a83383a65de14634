"""Reading saved results: paired comparisons with significance (compare) and release gates (gates).
In: Results. Out: a Comparison, GateOutcomes.
"""
