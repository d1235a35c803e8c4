"""When a hand-in was handed in: one parser for every time the course reads (timestamp.txt,
due dates, an LMS record), and where each hand-in's time comes from (course/README.md, "A term").

Accepted: a year-first date, `2026-12-01 23:59`, `2026-12-01 23:59:30.5 UTC`, `2026-12-01T23:59Z`,
`2026-12-01 23:59 +01:00`, `2026-12-01 23:59 Europe/Paris` (no zone: UTC, as nbgrader reads it).
Anything else is refused, `03/12/2026 14:00` first of all: 3 December or 12 March depends on
who wrote it, and a guess would move a due date or a penalty by months.

Where a hand-in's time comes from, most trusted first:
1. the course's record, `handin-times.csv` in the course folder (`student_id,assignment,time`:
   an LMS export, or the exchange's record): the time that counts, whatever timestamp.txt says;
2. the hand-in's `timestamp.txt` (nbgrader's submit/collect write it; a student can edit it);
3. nothing: the hand-in is never late.
Checked against the collection's own record, the files' times as collected (timestamp.txt's, or
the notebook's: the exchange and `cp -p` keep them): a claim that disagrees with them where it
matters (a different number of days late, or a time after the files arrived), a time before
the assignment opened (`opens`, term schedule) is FLAGGED, in autograde's log
and in grades.csv's `check` column. A timestamp.txt nothing can read never costs the hand-in its
grade: it is graded, at the collection's time (timestamp.txt's file time), flagged.
"""
from __future__ import annotations

import csv
import math
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FORMS = ("2026-12-01 23:59, 2026-12-01 23:59:00 UTC, 2026-12-01T23:59Z, 2026-12-01 23:59 +01:00 "
         "(year first; no zone means UTC)")
RECORD = "handin-times.csv"  # in the course folder: student data, git-ignored
TOLERANCE = timedelta(minutes=10)  # clocks and copies: closer than this is agreement

_YEAR_FIRST = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
                         r"\s*(.*)$")
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def parse_time(text: str, who: str = "") -> datetime:
    """A naive UTC datetime from `text`, or ValueError naming `who` and the accepted forms."""
    where = f"{who}: " if who else ""
    s = (text or "").strip()
    m = _YEAR_FIRST.match(s)
    if not m:
        why = ("day and month could be either way round" if re.match(r"^\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}", s)
               else "not a year-first date")
        raise ValueError(f"{where}cannot read the time '{s[:60]}' ({why}); write it as one of: {FORMS}")
    y, mo, d, hh, mm, ss, frac, zone = m.groups()
    try:
        at = datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0), int(ss or 0),
                      int((frac or "0")[:6].ljust(6, "0")))
    except ValueError as e:
        raise ValueError(f"{where}cannot read the time '{s[:60]}' ({e}); write it as one of: {FORMS}") from None
    zone = zone.strip()
    if zone in ("", "Z", "UTC", "GMT", "Z UTC"):
        return at
    try:  # a date at the edge of the calendar (year 1, 9999) that its zone moves past it
        return _to_utc(at, zone, where, s)
    except OverflowError:
        raise ValueError(f"{where}cannot read the time '{s[:60]}' (its zone moves it outside the calendar); "
                         f"write it as one of: {FORMS}") from None


def _to_utc(at: datetime, zone: str, where: str, s: str) -> datetime:
    off = _OFFSET.match(zone.replace(" ", ""))
    if off:
        sign = 1 if off.group(1) == "+" else -1
        return at - sign * timedelta(hours=int(off.group(2)), minutes=int(off.group(3) or 0))
    try:
        tz = ZoneInfo(zone)
    except (ValueError, OSError, ZoneInfoNotFoundError):
        raise ValueError(f"{where}cannot read the time zone '{zone[:40]}' in '{s[:60]}'; write it as one of: "
                         f"{FORMS}") from None
    local = at.replace(tzinfo=tz)
    return (local - local.utcoffset()).replace(tzinfo=None)


def show(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "none"


def days_late(at: datetime | None, due: datetime | None) -> int:
    """Started days past the due date (1 s late is one day), 0 when on time or without either."""
    if at is None or due is None or at <= due:
        return 0
    return math.ceil((at - due).total_seconds() / 86400)


@dataclass
class HandinTime:
    at: datetime | None  # the time that counts (naive UTC), None: never late
    source: str  # "record", "timestamp.txt", "file time", "none"
    flags: list[str] = field(default_factory=list)


def record(course_root: Path) -> dict[tuple[str, str], str]:
    """(student, assignment) -> time text, from handin-times.csv (an LMS export, the exchange's record)."""
    path = Path(course_root) / RECORD
    if not path.is_file():
        return {}
    out = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 3 and row[0].strip() and not row[0].startswith("#") and row[0].strip() != "student_id":
                out[(row[0].strip(), row[1].strip())] = row[2].strip()
    return out


STAMP_BYTES = 200  # a time is a few dozen characters: a bigger timestamp.txt is read no further


def read_stamp(path: Path) -> str | None:
    """The text of a hand-in's timestamp.txt, read within a bound (a student can hand in any file
    under that name), or None when there is none."""
    try:  # never through a link a student left, never a FIFO (hardening removes them; export reads first)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(STAMP_BYTES).decode("utf-8", errors="replace").strip()


def _mtime(p: Path) -> datetime | None:
    try:  # a copy keeps the time a student gave a file: past year 9999 where the filesystem holds it (tmpfs)
        return datetime.utcfromtimestamp(os.lstat(p).st_mtime)
    except (OSError, ValueError, OverflowError):
        return None


def of_handin(folder: Path, student: str, assignment: str, due: datetime | None = None,
              opens: datetime | None = None, records: dict | None = None) -> HandinTime:
    """The time that counts for the hand-in in `folder` (submitted/<student>/<assignment>), and
    every reason to doubt it."""
    folder = Path(folder)
    who = f"{student} {assignment}"
    flags: list[str] = []
    stamp = folder / "timestamp.txt"
    claim, claim_text = None, read_stamp(stamp)
    if claim_text is not None:
        try:
            claim = parse_time(claim_text, f"{who} timestamp.txt")
        except ValueError as e:
            flags.append(f"{e}; graded at the time the file was collected")
    # the collection's own record: the files' times as they arrived (kept by the exchange, cp -p)
    books = [p for p in folder.glob("*.ipynb")] if folder.is_dir() else []
    times = [t for t in [_mtime(stamp) if claim_text is not None else None] + [_mtime(b) for b in books] if t]
    collected = max(times) if times else None
    rec_text = (records or {}).get((student, assignment))
    rec = None
    if rec_text is not None:
        try:
            rec = parse_time(rec_text, f"{who} in {RECORD}")
        except ValueError as e:
            flags.append(str(e))
    if rec is not None:
        at, source = rec, "record"
        if claim is not None and abs(claim - rec) > TOLERANCE:
            flags.append(f"timestamp.txt says {show(claim)}, the course's record {show(rec)}: the record counts")
    elif claim is not None:
        at, source = claim, "timestamp.txt"
        if collected is not None and claim - collected > TOLERANCE:
            flags.append(f"timestamp.txt says {show(claim)}, after the hand-in's files were written ({show(collected)})")
        elif collected is not None and collected - claim > TOLERANCE and days_late(collected, due) != days_late(claim, due):
            flags.append(f"timestamp.txt says {show(claim)} ({days_late(claim, due)} day(s) late), but its files were "
                         f"written at {show(collected)} ({days_late(collected, due)} day(s) late): a back-dated time? "
                         f"Check it; a time in {RECORD} counts over it")
    elif claim_text is not None:
        at, source = (_mtime(stamp), "file time")
    else:
        at, source = None, "none"
    if at is not None and opens is not None and at < opens - TOLERANCE:
        flags.append(f"handed in at {show(at)}, before the assignment opened ({show(opens)})")
    return HandinTime(at, source, flags)


def install() -> None:
    """nbgrader reads timestamp.txt through the one parser: a time it cannot read (or an
    ambiguous one) is a warning naming the student, never the end of the whole command (nbgrader
    exits on it) and never a guess. Idempotent; called by grader.classroom.hardening.install."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    if getattr(CourseDirectory, "_course_times", False):
        return

    def get_existing_timestamp(self, dest_path):
        text = read_stamp(Path(dest_path) / "timestamp.txt")
        if text is None:
            return None
        who = " ".join(Path(dest_path).parts[-2:])
        try:
            return parse_time(text, f"{who} timestamp.txt")
        except ValueError as e:
            self.log.warning("%s; the hand-in is graded at the time its file was collected, and flagged "
                             "(grades.csv's check column)", e)
            return None

    def get_submitted_timestamp(self, assignment_id, student_id):
        # the formgrader's idea of a hand-in's time (it lists a hand-in whose time differs from the
        # gradebook's as not autograded): the time that counts, as autograde recorded it
        path = Path(self.coursedir.format_path(self.coursedir.submitted_directory, student_id, assignment_id))
        return of_handin(path, student_id, assignment_id, records=record(self.coursedir.root)).at

    CourseDirectory.get_existing_timestamp = get_existing_timestamp
    NbGraderAPI.get_submitted_timestamp = get_submitted_timestamp
    CourseDirectory._course_times = True
