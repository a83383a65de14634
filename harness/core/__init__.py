"""Plain data and the rules every stage shares: frozen types, errors with exit codes, the columnar run
and qrels, atomic file writes and owned output folders, UTF-8/.gz reading, the typed Result.
In: nothing from other stages. Out: imported by every other stage.
"""
