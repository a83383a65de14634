"""Every output format: results.json, run files, per_query.csv, report.md, report.html (with per-query drill-downs
and plots, also as PNG files), comparison tables, explain views, a sweep's leaderboard, goldset stats.
In: Results (and texts for the drill-downs). Out: text and files; all number formatting lives here.
"""
