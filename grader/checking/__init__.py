"""checking: one submission in, one verdict out.

`check` runs compile -> launch on fresh inputs -> compare -> time -> verdict; `exercises`
says what each graded exercise asks; `isolate` runs student kernels in a child process;
`verdict`, `hints`, `display` turn results into feedback; `stubs` and `cells` read sources.
May import grader.problems, grader.emu and grader.runtime.
"""
