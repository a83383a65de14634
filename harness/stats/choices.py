"""The names ``harness compare`` accepts for its significance test and multiple-comparison correction: here, not in
``compare``, so the CLI builds its options without importing the Result models (a fifth of every command's start)."""

TESTS = ("randomization", "ttest", "bootstrap", "wilcoxon")
CORRECTIONS = ("holm", "bonferroni", "none")
