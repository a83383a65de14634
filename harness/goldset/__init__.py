"""The golden set's life after it is written: build one from answers, check it against a changed corpus and repair
it, pool unjudged hits for people to judge and merge their judgments back, and describe it (stats).
In: golden-set files, a corpus, results.json files. Out: golden-set files, judging sheets, reports.
"""
