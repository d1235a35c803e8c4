"""`python -m grader.bench`: the reference kernels vs cuBLAS (see grader.bench.reference)."""
import sys

from grader.bench.reference import main

sys.exit(main())
