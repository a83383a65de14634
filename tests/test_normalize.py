"""core.normalize.normalise: the one loose-text rule for hit placement (LooseText) and goldset locate."""

import random
import unicodedata

from harness.text.normalize import LooseText, find_loose, normalise
from harness.gold.locate import locate


def _reference(text: str) -> tuple[str, list[int]]:
    """The rule written out character by character: NFKC + casefold each character, every whitespace character
    (also one a compatibility form brings) as one space, none at either end."""
    out, origin = [], []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).casefold():
            if c.isspace():
                if not out or out[-1] == " ":
                    continue
                c = " "
            out.append(c)
            origin.append(i)
    while out and out[-1] == " ":
        out.pop()
        origin.pop()
    return "".join(out), origin


PIECES = list("aZ \t\n\x0b\x1c.") + ["\u00a0", "\u2028", "\u3000", "\ufb01", "\u00df", "\u00a8", "\u00b4", "\u2474",
                                      "\u0130", "A\u030a", "\u1e9e", "\u00bd", "\u200b", "\u03a3", "\ufdfa", "\u00ad"]


def test_normalise_follows_the_rule_with_offsets():
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 12)))
        norm, where = normalise(text)
        assert (norm, where[:-1].tolist()) == _reference(text), repr(text)
        assert where[-1] == len(text)
        assert LooseText.of(text) == LooseText(*(norm, tuple(where[:-1].tolist())))


def test_a_space_from_a_compatibility_form_collapses_like_any_other():
    # U+00A8 DIAERESIS is " \u0308" in NFKC: next to a space it is one space, at the start none.
    assert normalise("a \u00a8b")[0] == "a \u0308b" == normalise("a\u00a8b")[0]
    assert normalise("\u00a8b")[0] == "\u0308b"
    doc = "Press  the \u00a8 KEY"
    assert find_loose(LooseText.of(doc), "press the \u00a8 key") == (0, len(doc))
    assert [(m.start, m.end, m.how) for m in locate(doc, "press the \u00a8 key")] == [(0, len(doc), "normalised")]
