"""Diagnostics: each query's verdict at the context window (missing document, wrong chunk, buried evidence...), with
the evidence that proves it, and the aggregates and advice over a run.
In: judged hits and the window. Out: verdicts for the Result and its renderers.
"""
