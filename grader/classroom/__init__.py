"""classroom: the course's files and nbgrader.

`workflow` (release -> autograde -> feedback -> export; `python -m grader.classroom dry-run`),
`nbgrader_ext` (the course's nbgrader preprocessors), `notebooks` (`sync`: every derived file,
from kernels/ and solutions/), `graded_cells` (what a solution notebook grades, read from its
cells), `course_tables` (the README's and the guide's tables), `notebook_file` (the one writer of
notebook files, in Jupyter's style), `headless` (static widgets under autograde), `doctor` (is this machine ready),
`cohort` and `cohort_job` (a whole cohort autograded in parallel, one job per GPU, through Dask),
and a term's pieces: `term` (due dates), `late` (penalty), `scores` (manual scores vs regrades),
`feedback` (pages without hidden tests, one score per cell), `export` (grades.csv with statuses),
`regrade` (a regrade never loses a result); after grading, `similarity` (kernels close to each
other) and `leaderboard` (the class's kernels against the library, with `leaderboard_page`,
`ladder` and `pseudonyms`).
May import grader.checking and everything below it.
"""
