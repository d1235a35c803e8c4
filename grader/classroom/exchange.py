"""nbgrader's exchange, seen from `autograde`: a hand-in waiting in the exchange that is newer than
the one collected (or one never collected) is named before grading, so an instructor never
grades a stale hand-in without a word (course/README.md, "With a JupyterHub exchange").

`install()` (course/nbgrader_config.py) makes `nbgrader autograde` log, for each student of the
assignment(s) it grades, the exchange's newest hand-in when `submitted/` holds an older one or
none, and say to run `nbgrader collect` first. It reads the exchange through nbgrader's own
collector (its configured root and its reading of `student+assignment+time` folder names) and
changes nothing; without an exchange it says nothing.

`nbgrader collect` takes only a student's own hand-ins: where a student id names an account of this
machine (a Hub whose students are its users, as nbgrader's guide sets one up), a folder in the
exchange under that id must belong to that account. Anyone can write the exchange's inbound folder,
so a classmate could put a folder there under someone else's name with a later time; nbgrader only
warns ("cheating attempt?") and collects it, over the real hand-in (the course's config collects the
newest). Such a folder is not collected, nor counted as a hand-in waiting (`impostor`), and the log
names it; the student's own newest hand-in is collected as if it were not there. Where ids are not
accounts here (one shared account, an LMS), nothing can tell who wrote a folder: nbgrader's warning
stands. Which it is, the exchange says (`self_owned`): ids are accounts once a hand-in there belongs to
the account it is named for, other than the folder's own owner's; a folder the instructor (or root) owns
is never refused. So a student whose id happens to name a system account (`news`) is collected where
students write as one shared account, and a forger cannot pass by handing in as themselves. A folder
owned by another student of the course (an id in the gradebook naming the folder's owner) is refused
from the term's first hand-in on, before the exchange holds such evidence.

`nbgrader collect` copies what a hand-in holds, never what it points at: nbgrader's copy (shutil's
copytree, run with the instructor's rights) follows links, so a hand-in's folder that was a link
(to `/proc/self/cwd/../solutions/A`: the answer key, graded as the student's own; to a
classmate's hand-in) or a link inside it (to the gradebook, a key) brought the instructor's files
into submitted/, where the student's notebook could print them onto its feedback page; a FIFO in
one hand-in (or, collecting as an ordinary user, a file of it you cannot read) stopped the
collection of every hand-in after it. A hand-in folder that is not a real folder is not collected;
inside one, only plain files and folders you can read are copied (a link, FIFO, socket, device,
hard-linked or unreadable file is left out, each named in the log). A hand-in whose timestamp.txt was
taken out (never late, then) gets the time its exchange folder is named by, which `nbgrader submit`
wrote beside it (`restore_time`), with a warning. The collected timestamp.txt's file time is when the
hand-in last changed in the exchange (`keep_arrival`: its latest status change, which no student can
set back), so a hand-in renamed to an earlier time, its timestamp.txt and file times rewritten to
match, is flagged in export's check column, not taken as on time.

The inbound folder is made sticky (`chmod +t`, by `release_assignment` and `collect`, where the
instructor owns it): nbgrader makes it writable by everyone, not sticky, so any student could
rename or remove anyone's hand-in there (rename a classmate's to another assignment's name: it is
never collected; to their own name: theirs). Sticky, each student can only add their own.

`nbgrader release_feedback` releases every page it can: one whose hand-in came by hand (put in
submitted/, so no `submission_secret.txt` to name the released page by), or whose secret is empty or
not text (a student can edit it in the exchange), is named and skipped, where nbgrader would stop at
it (FileNotFoundError, AssertionError, UnicodeDecodeError) and release none after it. A page that no
longer shows what the gradebook says (made before a regrade, a manual grade, a moved due date) is
not released either: it is named, and the command exits 1 after releasing the others. Those held back
are never passed to nbgrader's comma-separated exclusion list: any id, one with a comma too, is held alone.
"""
from __future__ import annotations

import fnmatch
import glob
import os
from collections import defaultdict

try:
    import pwd
except ImportError:  # not on Windows, where nbgrader's exchange does not run either
    pwd = None


def self_owned(inbound: str) -> set[int]:
    """The accounts that hand in as themselves here: uids owning a folder of the exchange's inbound folder
    named for their own account (`id+assignment+time`), the instructor's and root's left out. No student
    can make a folder another account owns, so only those students' own hand-ins put a uid here."""
    if pwd is None:
        return set()
    out = set()
    try:
        names = os.listdir(inbound)
    except OSError:
        return out
    for name in names:
        try:
            uid, want = os.lstat(os.path.join(inbound, name)).st_uid, pwd.getpwnam(name.rsplit("+", 3)[0]).pw_uid
        except (OSError, KeyError, ValueError):
            continue
        if uid == want and uid not in (0, os.geteuid()):
            out.add(uid)
    return out


def roster(coursedir) -> set[str]:
    """The student ids of the course's gradebook (empty where it does not exist yet: never made here)."""
    url = getattr(coursedir, "db_url", "") or ""
    if url.startswith("sqlite:///") and not os.path.exists(url[len("sqlite:///"):]):
        return set()
    try:
        from nbgrader.api import Gradebook

        with Gradebook(url) as gb:
            return {st.id for st in gb.students}
    except Exception:  # noqa: BLE001 - an unreadable gradebook: the exchange's own evidence alone decides
        return set()


def impostor(path: str, student: str, accounts: set[int] | None = None, students: set[str] = frozenset()) -> str | None:
    """Why the exchange folder `path`, named for `student`, is not that student's own (None when it
    is, or when nothing here can tell). Never follows a link. `accounts`: self_owned() of its inbound
    folder (None: taken as ids being accounts); `students`: the course's student ids (roster())."""
    if pwd is None:
        return None
    try:
        want = pwd.getpwnam(student).pw_uid
    except (KeyError, ValueError):
        return None
    try:
        uid = os.lstat(path).st_uid
    except OSError as e:
        return f"it cannot be read ({e.strerror})"
    if uid == want:
        return None
    # yours (or root's): put there by you, or every student writes as your account (some container
    # spawners): no student can make a folder you own
    if uid in (0, os.geteuid()):
        return None
    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        owner = f"uid {uid}"
    if owner in students:
        # written by another student of the course under their own account: a forgery from the term's
        # first hand-in on, before the exchange holds any evidence that ids are accounts
        return f"it belongs to {owner}, another student of this course, not to {student}"
    # no other account hands in as itself: ids are not accounts here (the students write as one shared
    # account), and an id that happens to name an account of this machine (news, backup) says nothing of
    # who wrote the folder. Only the owner can have handed in as itself, so a forger alone cannot pass.
    if accounts is not None and not accounts - {uid}:
        return None
    return f"it belongs to {owner}, not to {student}"


def refusal(path: str, student: str, check_owner: bool = True, accounts: set[int] | None = None,
            students: set[str] = frozenset()) -> str | None:
    """Why the exchange entry `path`, named for `student`, is not collected (None: it is): not a real
    folder (a link, whatever it leads to), or, with nbgrader's owner check on, not the student's own."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError as e:
        return f"it cannot be read ({e.strerror})"
    if stat.S_ISLNK(mode):
        return "it is a link (to someone else's files?), not a hand-in's folder"
    if not stat.S_ISDIR(mode):
        return "it is not a folder"
    return impostor(path, student, accounts, students) if check_owner else None


def refuser(collector, inbound: str):
    """refusal() for the entries of the inbound folder `inbound`, by `collector`'s owner check, with what
    it reads once for them all (the exchange's evidence, the gradebook's ids): (path, student) -> why or None."""
    accounts = self_owned(inbound)
    students = roster(collector.coursedir) if collector.check_owner else set()
    return lambda path, student: refusal(path, student, collector.check_owner, accounts, students)


def _own_records(collector, records: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """The records whose folder may be collected, and why each other one may not."""
    refused, why_not = {}, refuser(collector, collector.inbound_path)
    for r in records:
        why = why_not(os.path.join(collector.inbound_path, r["filename"]), r["username"])
        if why:
            refused[r["filename"]] = why
    return [r for r in records if r["filename"] not in refused], refused


def plain_entries(src: str) -> tuple[dict[str, list[str]], list[str], float]:
    """What of the exchange folder `src` may be copied ({folder: names to leave out}), what is left
    out and why, and when `src` or anything in it last changed (the latest st_ctime: a rename, an
    edited timestamp.txt or a `touch -d` all set it to the time they ran, and no student can set it
    back); never follows a link."""
    import stat

    from grader.classroom.hardening import not_plain

    leave, said, latest = {}, [], os.lstat(src).st_ctime
    for dirpath, dirnames, filenames in os.walk(src):
        out = []
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                out.append(name)
                continue
            latest = max(latest, st.st_ctime)
            why = not_plain(st) or (
                ("a folder you cannot read" if not os.access(p, os.R_OK | os.X_OK) else None)
                if stat.S_ISDIR(st.st_mode) else ("a file you cannot read" if not os.access(p, os.R_OK) else None))
            if why:
                out.append(name)
                said.append(f"{p} ({why})")
        dirnames[:] = [d for d in dirnames if d not in out]
        leave[os.path.abspath(dirpath)] = out
    return leave, said, latest


def make_sticky(path: str, log=None) -> None:
    """The exchange's inbound folder with its sticky bit (each student can rename or remove only what
    they wrote there), where the instructor owns it; said once when it was not."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_ISVTX or st.st_uid != os.geteuid():
        return
    os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_ISVTX)
    if log is not None:
        log.warning("made the exchange's inbound folder %s sticky (chmod +t): without it, any student could rename "
                    "or remove another student's hand-in", path)


def restore_time(src: str, dest: str, log=None) -> None:
    """A collected hand-in without its timestamp.txt gets the time its exchange folder is named by:
    `nbgrader submit` writes the same time in both, and without one the hand-in is never late (and
    nbgrader collects it again on every `collect`). Said in the log."""
    from grader.classroom.handin_time import parse_time

    stamp = os.path.join(dest, "timestamp.txt")
    if os.path.lexists(stamp):
        return
    parts = os.path.basename(src).rsplit("+", 3)
    try:
        parse_time(parts[2])
    except (IndexError, ValueError):
        return
    with open(stamp, "w") as f:
        f.write(parts[2])
    if log is not None:
        log.warning("%s had no timestamp.txt (`nbgrader submit` writes one: taken out?); written from the time its "
                    "folder in the exchange is named by, %s", dest, parts[2])


def keep_arrival(src: str, dest: str, latest: float, log=None) -> None:
    """The collected timestamp.txt's file time is `latest`, when the hand-in `src` last changed in the
    exchange (plain_entries), if
    later than the time it was copied with: the file time is the collection's own record of when
    the files arrived (grader.classroom.handin_time), and a copy keeps the times a student gave
    them. A student who handed in late, then renamed the folder to an earlier time, wrote that time
    into timestamp.txt and `touch -d`-ed the files, was on time with an empty check column; now the
    days late by the time named and by the files differ, and export's check column says so. The
    log names a hand-in whose time is earlier than its last change by more than the tolerance."""
    from datetime import datetime

    from grader.classroom.handin_time import TOLERANCE, parse_time, read_stamp, show

    stamp = os.path.join(dest, "timestamp.txt")
    try:
        st = os.lstat(stamp)
    except OSError:
        return
    if latest > st.st_mtime:
        os.utime(stamp, (latest, latest), follow_symlinks=False)
    try:
        claim = parse_time(read_stamp(stamp) or "")
    except ValueError:
        return
    changed = datetime.utcfromtimestamp(latest)
    if changed - claim > TOLERANCE and log is not None:
        log.warning("%s names %s, but it last changed in the exchange at %s (renamed, or its files edited, after "
                    "handing in?): its timestamp.txt keeps that as its file time, and export's check column flags it "
                    "where the days late differ", os.path.basename(src), show(claim), show(changed))


def _newest(collector, records: list[dict]) -> list[dict]:
    """nbgrader's choice among each student's hand-ins (ExchangeCollect.init_src): the newest, or with
    --before-duedate the newest before the due date (else the newest)."""
    groups = defaultdict(list)
    for r in records:
        groups[r["username"]].append(r)
    out = []
    for group in groups.values():
        group = collector._sort_by_timestamp(group)
        if collector.duedate is not None and collector.before_duedate:
            on_time = [r for r in group if r["timestamp"] <= collector.duedate]
            out.append(on_time[0] if on_time else group[0])
        else:
            out.append(group[0])
    return out


def uncollected(coursedir, config) -> list[tuple[str, str, str]]:
    """(student, assignment, time) of every hand-in in the exchange newer than what submitted/
    holds for that student and assignment (or with nothing there)."""
    from nbgrader.exchange.default.collect import ExchangeCollect

    if not coursedir.course_id:
        return []
    collector = ExchangeCollect(coursedir=coursedir, config=config)
    inbound = os.path.join(collector.root, coursedir.course_id, "inbound")
    try:
        names = os.listdir(inbound)
    except OSError:
        return []  # no exchange here (or not readable): nothing to compare with
    newest: dict[tuple[str, str], object] = {}
    why_not = refuser(collector, inbound)
    for name in names:
        parts = name.rsplit("+", 3)
        if len(parts) < 3:
            continue
        try:
            rec = collector._path_to_record(os.path.join(inbound, name))
        except Exception:  # noqa: BLE001 - a folder nbgrader itself could not read is not a hand-in
            continue
        if why_not(os.path.join(inbound, name), rec["username"]):
            continue  # never collected (install), so never waiting either
        key = (rec["username"], parts[1])
        if not (fnmatch.fnmatch(key[0], coursedir.student_id or "*")
                and fnmatch.fnmatch(key[1], coursedir.assignment_id or "*")):
            continue
        if key not in newest or rec["timestamp"] > newest[key]:
            newest[key] = rec["timestamp"]
    out = []
    for (student, assignment), when in sorted(newest.items()):
        folder = coursedir.format_path(coursedir.submitted_directory, student, assignment)
        have = coursedir.get_existing_timestamp(folder) if os.path.isdir(folder) else None
        if have is None or when > have:
            out.append((student, assignment, str(when)))
    return out


def warn_uncollected(converter) -> None:
    late = uncollected(converter.coursedir, converter.config)
    for student, assignment, when in late:
        converter.log.warning("%s handed in %s again (the exchange, %s): what is in submitted/ is older or "
                              "missing and is what this run grades", student, assignment, when)
    if late:
        names = sorted({a for _, a, _ in late})
        converter.log.warning("run `nbgrader collect %s` first, then autograde again: the newer hand-ins are "
                              "then graded", " / ".join(names))


def unreleasable(pattern: str) -> list[tuple[str, str]]:
    """(student, why) for each feedback folder (matching nbgrader's `pattern`) with a page that
    `release_feedback` cannot release: its hand-in came by hand (no `submission_secret.txt`), or its
    secret is not what `nbgrader submit` writes (empty, or not text: a student can edit it in the
    exchange), on which nbgrader stops (AssertionError, UnicodeDecodeError) and releases no page after it."""
    from grader.classroom.hardening import EXCHANGE_FILES

    out = []
    for folder in sorted(glob.glob(pattern)):
        if not glob.glob(os.path.join(glob.escape(folder), "*.html")):
            continue
        student = os.path.basename(os.path.dirname(folder))
        missing = [n for n in EXCHANGE_FILES if not os.path.isfile(os.path.join(folder, n))]
        if "submission_secret.txt" in missing:
            out.append((student, "did not come through the exchange (no submission_secret.txt)"))
            continue
        if missing:
            out.append((student, f"has no {missing[0]} (`nbgrader submit` writes one: removed in the exchange?)"))
            continue
        try:
            with open(os.path.join(folder, "submission_secret.txt"), encoding="utf-8") as f:
                secret = f.read()
        except (OSError, UnicodeDecodeError):
            secret = ""
        if not secret:
            out.append((student, "has a submission_secret.txt that is empty or not text, not what `nbgrader submit` "
                                 "writes (edited in the exchange?)"))
    return out


def install() -> None:
    from nbgrader.converters.autograde import Autograde
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

    if getattr(Autograde, "_tc_exchange", False):
        return
    start = Autograde.start
    release = ExchangeReleaseFeedback.copy_files

    def release_what_can_be(self):
        # nbgrader stops at the first page it cannot release and releases nothing after it: a hand-in
        # put in submitted/ by hand has no page to release through the exchange, nor one whose secret is
        # not a secret
        cannot = unreleasable(self.src_path)
        for student, why in cannot:
            self.log.warning("not released: %s's hand-in of %s %s: give them feedback/%s/%s/ by hand", student,
                             self.coursedir.assignment_id, why, student, self.coursedir.assignment_id)
        by_hand = [student for student, _ in cannot]
        # a page made before a regrade, a manual grade or a moved due date: the student would fetch
        # scores the gradebook no longer holds, so it waits for `generate_feedback`
        from grader.classroom.regrade import stale_feedback

        stale = [(s, why) for s, why in stale_feedback(self.coursedir, self.src_path) if s not in by_hand]
        for student, why in stale:
            self.log.error("not released: %s's feedback page of %s is stale (%s): run `nbgrader generate_feedback "
                           "%s`, then release_feedback again", student, self.coursedir.assignment_id, why,
                           self.coursedir.assignment_id)
        # each other student's folder released on its own, by a literal pattern: nbgrader's exclusion list
        # (student_id_exclude) is split on commas, so an id with one ("kim,lee") was never held back (and held
        # back "kim" and "lee"); an id may hold glob's [ ] * ? too. Your own --CourseDirectory.student_id_exclude
        # still counts (nbgrader applies it in each call).
        held = set(by_hand) | {s for s, _ in stale}
        pattern, out = self.src_path, None
        try:
            for folder in sorted(glob.glob(pattern)):
                if os.path.basename(os.path.dirname(folder)) not in held:
                    self.src_path = glob.escape(folder)
                    out = release(self)
        finally:
            self.src_path = pattern
        if stale:
            self.fail(f"{len(stale)} stale feedback page(s) not released (the others were): run `nbgrader "
                      f"generate_feedback {self.coursedir.assignment_id}`, then release_feedback again")
        return out

    ExchangeReleaseFeedback.copy_files = release_what_can_be

    from nbgrader.exchange.default.collect import ExchangeCollect

    plain_init_src = ExchangeCollect.init_src

    def init_src_own_only(self):
        plain_init_src(self)
        make_sticky(self.inbound_path, self.log)
        who = self.coursedir.student_id or "*"
        pattern = os.path.join(glob.escape(self.inbound_path), f"{who}+{self.coursedir.assignment_id}+*")
        own, refused = _own_records(self, [self._path_to_record(f) for f in glob.glob(pattern)])
        for name, why in sorted(refused.items()):
            self.log.error("not collected: %s in the exchange: %s. Anyone can write the exchange's inbound folder; "
                           "the student's own hand-ins are collected as if it were not there.", name, why)
        if refused:
            self.src_records = _newest(self, own)

    ExchangeCollect.init_src = init_src_own_only

    from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment

    plain_init_dest = ExchangeReleaseAssignment.init_dest

    def init_dest_sticky(self):
        plain_init_dest(self)
        make_sticky(self.inbound_path)  # made here, when nbgrader makes the folder: nothing to say

    ExchangeReleaseAssignment.init_dest = init_dest_sticky

    plain_copy = ExchangeCollect.do_copy

    def copy_what_it_holds(self, src, dest, log=None):
        import shutil
        import stat

        if not stat.S_ISDIR(os.lstat(src).st_mode):  # init_src left links out: never followed, whatever calls this
            raise RuntimeError(f"not collected: {src} is not a folder")
        leave, said, latest = plain_entries(src)
        for what in said:
            self.log.warning("not collected: %s, in a hand-in in the exchange", what)
        copytree = shutil.copytree

        def without_them(s, d, ignore=None, **kw):
            def skip(dirpath, names):
                return set(ignore(dirpath, names) if ignore else ()) | set(leave.get(os.path.abspath(dirpath), ()))
            return copytree(s, d, ignore=skip, **kw)

        shutil.copytree = without_them  # nbgrader's own copy (its size limits, ignore globs), minus those
        try:
            plain_copy(self, src, dest, log)
        finally:
            shutil.copytree = copytree
        restore_time(src, dest, self.log)
        keep_arrival(src, dest, latest, self.log)

    ExchangeCollect.do_copy = copy_what_it_holds

    def start_after_looking(self):
        try:
            warn_uncollected(self)
        except Exception as e:  # noqa: BLE001 - advice only: never stops a grading run
            self.log.warning("could not compare the exchange with submitted/: %s", e)
        return start(self)

    Autograde.start = start_after_looking
    Autograde._tc_exchange = True
