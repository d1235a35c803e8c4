"""Stable pseudonyms for a class shown on a projector: "Amber Otter 17" for a student id, the same
in every run of the same course and different in another course.

A name is an HMAC-SHA256 of the student id under the course's own secret (KEY_FILE in the course
folder, made on first use, readable by its owner only): without the secret nobody can tell who is
who from a name, nor recompute one from an id. Two ids that draw the same name (about one class of
300 in ten) both get a few characters of their HMAC added, so no two students share one.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = ".tc-pseudonym-key"

ADJECTIVES = ("Amber", "Azure", "Bold", "Brave", "Bright", "Brisk", "Calm", "Clever", "Cobalt", "Coral", "Crimson",
              "Curious", "Daring", "Dusky", "Eager", "Emerald", "Fearless", "Fleet", "Gentle", "Gilded", "Glad",
              "Golden", "Grand", "Hardy", "Hazel", "Humble", "Indigo", "Ivory", "Jade", "Jolly", "Keen", "Kind",
              "Lively", "Lucky", "Lunar", "Merry", "Mighty", "Misty", "Nimble", "Noble", "Ochre", "Olive", "Patient",
              "Plucky", "Polar", "Proud", "Quick", "Quiet", "Rapid", "Rosy", "Ruby", "Rustic", "Sable", "Scarlet",
              "Silver", "Sly", "Solar", "Steady", "Stormy", "Sunny", "Swift", "Tidal", "Violet", "Witty")
ANIMALS = ("Albatross", "Badger", "Beaver", "Bison", "Bobcat", "Crane", "Cricket", "Dolphin", "Eagle", "Falcon",
           "Ferret", "Finch", "Fox", "Gazelle", "Gecko", "Heron", "Hedgehog", "Ibis", "Jackal", "Jaguar", "Kestrel",
           "Koala", "Lemur", "Lynx", "Magpie", "Marten", "Meerkat", "Moose", "Narwhal", "Newt", "Ocelot", "Orca",
           "Osprey", "Otter", "Owl", "Panda", "Pelican", "Penguin", "Puffin", "Quail", "Rabbit", "Raven", "Robin",
           "Salmon", "Seal", "Shrike", "Sparrow", "Stoat", "Swan", "Tapir", "Tern", "Tiger", "Toucan", "Turtle",
           "Vole", "Walrus", "Weasel", "Whale", "Wolf", "Wombat", "Wren", "Yak", "Zebra", "Zebu")


def course_key(course: Path) -> bytes:
    """The course's secret, made on first use (never overwritten: every name depends on it)."""
    path = Path(course) / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
    key = path.read_text().strip()
    if len(key) < 32:
        raise ValueError(f"{path} holds no pseudonym key (it is made on first use; restore it from a backup, or "
                         "delete it to draw new names for everyone)")
    return key.encode()


def _digest(key: bytes, student: str) -> bytes:
    return hmac.new(key, student.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()


def name(key: bytes, student: str) -> str:
    d = _digest(key, student)
    return f"{ADJECTIVES[d[0] % len(ADJECTIVES)]} {ANIMALS[d[1] % len(ANIMALS)]} {10 + d[2] % 90}"


def names(key: bytes, students) -> dict[str, str]:
    """{student id: pseudonym}, all different."""
    out = {s: name(key, s) for s in students}
    seen: dict[str, list[str]] = {}
    for s, n in out.items():
        seen.setdefault(n, []).append(s)
    for n, ids in seen.items():
        if len(ids) > 1:
            for s in ids:
                out[s] = f"{n}-{_digest(key, s)[3:6].hex()}"
    return out
