"""checking: one submission in, one verdict out.

`check` runs the ordered steps of `steps/` (compile -> launch on fresh inputs -> compare -> time
-> verdict), `judge` says what a run got wrong, `scoring` what a verdict is worth; `exercises`
says what each graded exercise asks; `isolate` runs student kernels in a child process;
`verdict`, `hints`, `display` turn results into feedback; `stubs` and `cells` read sources.
May import grader.problems, grader.emu and grader.runtime.
"""
