"""nbgrader configuration of the course (nbgrader 0.9.6). Run nbgrader from this folder:

    cd course && nbgrader generate_assignment 03-cuda-core-gemm

solutions/ (one folder per assignment) is nbgrader's source; release/, submitted/,
autograded/, feedback/ and gradebook.db live here and are git-ignored. See course/README.md.
"""
import os
import secrets
import tempfile
import warnings
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ComputeChecksums,
    IgnorePattern,
    IncludeHeaderFooter,
    InstantiateTests,
    LimitOutput,
    LockCells,
    SaveAutoGrades,
    SaveCells,
)

from grader.classroom import hardening
from grader.classroom.autograde import CourseExecute, TrustedGrade
from grader.classroom.nbgrader_ext import CudaClearSolutions

HERE = Path(__file__).resolve().parent
# nbgrader never follows a link a student left, feedback copies only its pages, and autograde
# refuses to run without the sandbox and the trusted grader below (grader/classroom/hardening.py)
hardening.install()
c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.root = str(HERE)
c.CourseDirectory.course_id = "tensor-cores"
# The single source of truth: the repository's solutions/ folder.
c.CourseDirectory.source_directory = os.environ.get("TC_SOURCE_DIR", str(HERE.parent / "solutions"))

# Kernel solutions live in CUDA strings: their stub must be C++ that compiles, not Python.
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter, InstantiateTests, LockCells, CudaClearSolutions, ClearOutput, CheckCellMetadata,
    ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ComputeChecksums, CheckCellMetadata,
]

# What is trusted (course/README.md, "What is trusted"): the notebook runs in a sandboxed kernel
# (CourseExecute; bubblewrap, or autograde stops naming the package; TC_NO_SANDBOX=1 opts out
# with a warning on every feedback page), then TrustedGrade replaces every graded cell's output
# by the verdict of a fresh interpreter that reads the submission as text. nbgrader's own list,
# with those two in place of Execute and just before SaveAutoGrades.
c.Autograde.autograde_preprocessors = [
    CourseExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, TrustedGrade, SaveAutoGrades,
    AssignLatePenalties, CheckCellMetadata,
]

# A graded kernel cell compiles, runs several cases in a child process and, on a GPU, times the
# kernel and the library: minutes on the CPU emulator in the worst case. The grader's own
# per-step limits (compile, each case, timing) fire first and cost only that check.
c.Execute.timeout = 600

# Kernels talk to nbgrader over IPC sockets rather than TCP ports: several autogrades on one
# machine then cannot race for the same port (seen here: a client waiting forever on a
# kernel that was idle).
c.KernelManager.transport = "ipc"
# An absolute socket path: the kernel runs in the notebook's folder, nbgrader elsewhere.
c.KernelManager.ip = os.path.join(tempfile.gettempdir(), f"tc-kernel-{os.getpid()}")

# A student could tag a locked test cell `skip-execution` and keep its points: make the tag
# that skips a cell one nobody can guess (created once per course folder, never committed).
_tag_file = HERE / ".skip_tag"
if not _tag_file.exists():
    _tag_file.write_text(secrets.token_hex(16))
c.Execute.skip_cells_with_tag = _tag_file.read_text().strip()

# No one turns a dial during autograding: widgets render statically (grader/classroom/headless.py);
# live Output widgets can leave a headless execution waiting forever (jupyter/nbclient#312).
os.environ.setdefault("TC_HEADLESS", "1")

# Any stderr output zeroes a test cell: the grader writes none, but library warnings
# (NumPy, matplotlib, CuPy) must not cost a student points.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(Warning|warn\(|WARNING)"

# nbgrader 0.9.6 builds a new submission's rows before adding them to its SQLAlchemy 2 session,
# which prints three "SAWarning: Object of type <Submitted...> not in session" blocks the first
# time each student is autograded. The rows are added right after (the scores are checked by
# tests/test_class_workflow.py and tests/test_instructor_guide.py): only this message is hidden.
warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
