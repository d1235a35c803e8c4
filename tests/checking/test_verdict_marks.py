"""Verdict marks render in every font and read as words (issue #15, item 5).

Emoji marks (&#9989; &#10060;) showed as empty boxes in a Chromium without a colour-emoji font.
The HTML of a verdict may hold only characters every text font has; each item's status is the
word PASS / FAIL / SKIP, which a screen reader reads."""
import html as html_lib
import re

from grader.checking.verdict import FAIL, PASS, SKIP, Item, Verdict, badge


def verdict() -> Verdict:
    return Verdict("sgemm-naive", "emu", [Item("compiles", PASS, "ok"),
                                          Item("correct: M=33 N=17 K=9", FAIL, "wrong at (0, 1)", hint="check k"),
                                          Item("speed", SKIP, "needs a GPU")], score=1, max_score=3)


# Latin-1 and the typographic punctuation of WGL4 (the glyph list core text fonts cover): dashes,
# quotes, ellipsis. Emoji (U+2705, U+274C, U+2796) and dingbats (U+2713) are not in it.
EVERY_FONT = {chr(c) for c in range(0xA0, 0x100)} | set("\u2013\u2014\u2018\u2019\u201c\u201d\u2026")


def test_marks_are_words_in_every_font():
    page = verdict()._repr_html_()
    text = html_lib.unescape(page)  # numeric entities such as &#9989; become their characters
    odd = sorted({c for c in text if ord(c) > 0x7F and c not in EVERY_FONT})
    assert odd == [], f"characters a plain text font may lack: {[f'U+{ord(c):04X}' for c in odd]}"
    words = re.findall(r">(PASS|FAIL|SKIP)</span>", page)
    assert words == ["PASS", "FAIL", "SKIP"], words  # one word per item, in order


def test_badge_is_the_word_on_its_colour():
    for status, word in ((PASS, "PASS"), (FAIL, "FAIL"), (SKIP, "SKIP")):
        b = badge(status)
        assert re.fullmatch(r"<span style='[^']*background:#[0-9a-f]{6};color:#fff;[^']*'>" + word + "</span>", b), b
    assert badge(PASS) != badge(FAIL)
