"""`python -m grader.classroom dry-run ...` (see grader.classroom.workflow)."""
import sys

from grader.classroom.workflow import main

sys.exit(main())
