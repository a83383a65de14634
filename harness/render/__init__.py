"""Every output format: results.json, run files, per_query.csv, report.md, report.html, explain views.
In: Results. Out: text and files; all number formatting lives here.
"""
