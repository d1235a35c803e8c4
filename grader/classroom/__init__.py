"""classroom: the course's files and nbgrader.

`workflow` (release -> autograde -> feedback -> export; `python -m grader.classroom dry-run`),
`nbgrader_ext` (the course's nbgrader preprocessors), `notebooks` (student notebooks generated
from solutions/), `headless` (static widgets under autograde), `doctor` (is this machine ready),
`cohort` and `cohort_job` (a whole cohort autograded in parallel, one job per GPU, through Dask),
and a term's pieces: `term` (due dates), `late` (penalty), `scores` (manual scores vs regrades),
`feedback` (pages without hidden tests, one score per cell), `export` (grades.csv with statuses),
`regrade` (a regrade never loses a result).
May import grader.checking and everything below it.
"""
