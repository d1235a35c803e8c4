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
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ComputeChecksums,
    DeduplicateIds,
    GetGrades,
    IgnorePattern,
    IncludeHeaderFooter,
    InstantiateTests,
    LimitOutput,
    LockCells,
    OverwriteKernelspec,
    SaveAutoGrades,
    SaveCells,
)

from grader.classroom import exchange
from grader.classroom import hardening
from grader.classroom import regrade
from grader.classroom.autograde import CourseExecute, TrustedGrade
from grader.classroom.export import CourseCsvExport
from grader.classroom.feedback import FeedbackClearHiddenTests, OneScorePerCell, StripHiddenTests
from grader.classroom import due_dates, standing
from grader.classroom.late import CourseLatePenalties
from grader.classroom.nbgrader_ext import ColabSetupCell, CudaClearSolutions, QuietOverwriteCells, SpeedPoints
from grader.classroom.safe_outputs import SafeOutputs
from grader.classroom.scores import ReconcileManualScores, RememberScores

# ---- the term's settings (course/README.md, "A term") -------------------------------------
# CPU-only grading: speed cells award nothing and count for nothing (maximum, scores, feedback
# and export are out of the correctness points). One switch for the whole term: set it before
# `generate_assignment` (the gradebook's maximum comes from there); TC_CPU_ONLY=1 turns it on
# for one command.
CPU_ONLY = False
# Late hand-ins lose this share of their score per started day past the due date (due dates:
# `python -m grader.classroom.term schedule ...`); 100 makes any late hand-in a 0.
LATE_PERCENT_PER_DAY = 10.0
# A manual (formgrader) score on a cell whose automatic result changes on a regrade (the hand-in,
# the test, a check's pass/fail, or the score by more than its speed timing noise; noise alone
# never clears it): "clear" (the new automatic score counts; the log says so) or "keep".
MANUAL_SCORE_ON_REGRADE = "clear"
# Seconds a cell may run while autograding: one that awards no points, and a graded one.
CELL_LIMIT_PLAIN, CELL_LIMIT_GRADED = 60, 120
# ---------------------------------------------------------------------------------------------

if CPU_ONLY:
    os.environ.setdefault("TC_CPU_ONLY", "1")

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
# The release starts with the Colab setup cell, like the notebooks/ copies; under CPU-only
# grading a kernel cell is worth its correctness points (SpeedPoints, before SaveCells).
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter, InstantiateTests, LockCells, CudaClearSolutions, ClearOutput, CheckCellMetadata,
    SpeedPoints, ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ColabSetupCell, ComputeChecksums,
    CheckCellMetadata,
]

# What is trusted (course/README.md, "What is trusted"): the notebook runs in a sandboxed kernel
# (CourseExecute; bubblewrap, or autograde stops naming the package; TC_NO_SANDBOX=1 opts out
# with a warning on every feedback page), then TrustedGrade replaces every graded cell's output
# by the verdict of a fresh interpreter that reads the submission as text. nbgrader's own list,
# with those two in place of Execute and just before SaveAutoGrades.
# RememberScores / ReconcileManualScores around SaveAutoGrades: a manual score on a cell whose
# automatic result changed beyond timing noise is cleared (or kept, MANUAL_SCORE_ON_REGRADE) before
# penalties count (grader/classroom/scores.py).
# SafeOutputs last: what is written to autograded/ is data (outputs sanitized, sizes capped).
c.Autograde.autograde_preprocessors = [
    CourseExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, TrustedGrade, RememberScores,
    SaveAutoGrades, ReconcileManualScores, CourseLatePenalties, CheckCellMetadata, SafeOutputs,
]
c.ReconcileManualScores.on_change = MANUAL_SCORE_ON_REGRADE
# nbgrader's sanitizing step, with no checksum warning for an untouched test cell (its hidden
# tests are in the gradebook, not in the release).
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, QuietOverwriteCells,
                                     CheckCellMetadata]
# A cell that runs too long is stopped and the notebook graded all the same (CourseExecute).
c.CourseExecute.timeout_plain = CELL_LIMIT_PLAIN
c.CourseExecute.timeout_graded = CELL_LIMIT_GRADED

# Feedback: hidden tests cut (the graded cells carry the full test source), one score per cell,
# outputs reduced to data again (whatever wrote autograded/).
c.GenerateFeedback.preprocessors = [GetGrades, FeedbackClearHiddenTests, StripHiddenTests, OneScorePerCell,
                                    SafeOutputs, CSSHTMLHeaderPreprocessor]
# A forced regrade keeps the earlier result until the new one exists, also when stopped by
# Ctrl-C, SIGTERM or SIGHUP; generate_feedback skips a stray notebook in a student's folder,
# refuses a half-written autograded one and remakes a stale page (grader/classroom/regrade.py).
regrade.install()

# With an exchange: `nbgrader collect` takes each student's NEWEST hand-in, replacing an earlier
# one it collected (nbgrader's default keeps the first and skips a resubmission unless given
# --update; an instructor would then grade a stale hand-in without a word). `autograde` regrades
# what collect replaced, and generate_feedback makes its page again (course/README.md, "With a
# JupyterHub exchange"). `nbgrader collect --before-duedate A` still picks the last on time.
c.ExchangeCollect.update = True
# ... and `autograde` names any hand-in still waiting in the exchange (newer than the collected one,
# or never collected) before it grades (grader/classroom/exchange.py).
exchange.install()

# Late penalties (nbgrader's default method is "none": a late hand-in would lose nothing),
# computed in one place (grader/classroom/standing.py) from the score, the due date and the
# hand-in's time as they are now: autograde (CourseLatePenalties), export, `term schedule`, and
# every gradebook write in this process (a manual grade in the formgrader, `nbgrader db`).
standing.install(LATE_PERCENT_PER_DAY)
# ... and nbgrader's own commands keep due dates: `db assignment add` without a date, `db assignment remove`
# then a new release (grader/classroom/due_dates.py).
due_dates.install()
# grades.csv sorted by assignment and student, with a status column: a submission the trusted
# grader could not grade is flagged, never exported as a plain 0; late hand-ins show their penalty.
c.ExportApp.plugin_class = CourseCsvExport

# The backstop above the per-cell limits of CourseExecute (CELL_LIMIT_PLAIN / _GRADED): under
# autograde the notebook's own kernel checks compute nothing (the trusted pass grades), so no
# cell needs long; the grader's own per-step limits bound the trusted pass.
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
# tests/classroom/test_class_workflow.py and tests/classroom/test_instructor_guide.py): only this message is hidden.
warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
