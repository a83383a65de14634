"""The built-in stopword lists, by name (``tokenizer.stopwords`` of a BM25 retriever). Each is a public list,
copied word for word so a run does not depend on another library being installed or on its version:

- ``lucene`` (33 words; ``english`` is the same list under its older name): Lucene's ``EnglishAnalyzer`` default
  stop set, ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (Apache License 2.0), what Anserini's BM25 baselines use.
  Articles, conjunctions, prepositions, forms of *be*, a few pronouns: no question words, no *do*, no *i*.
- ``nltk`` (179 words): NLTK's ``stopwords.words("english")`` (nltk_data, Apache License 2.0, as of NLTK 3.5+):
  pronouns (*i*, *me*, *you*), forms of *be*/*have*/*do*, question words (*what*, *how*, *why*), and the pieces
  contractions leave (*don*, *t*, *ve*).
- ``sklearn`` (318 words): scikit-learn's ``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS`` (BSD-3-Clause),
  itself the Glasgow Information Retrieval Group's list: most of ``nltk``'s whole words and many more (numbers
  spelled out, *also*, *however*, *amongst*, *thereby*), but not *does*, *did*, *doing*, *having*, *just* nor the
  contraction pieces. Every ``lucene`` word is in both other lists.
"""

from __future__ import annotations

from pathlib import Path

# A stopword file is a short list; anything larger is not one (a corpus given by mistake).
MAX_FILE_BYTES = 1 << 20

LUCENE = frozenset("""
    a an and are as at be but by for if in into is it no not of on or such that the their then there these they this
    to was will with
""".split())

# In NLTK's own order (the file's), so a reader can compare it line by line with nltk_data's corpora/stopwords/english.
NLTK = frozenset("""
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
    himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this
    that that'll these those am is are was were be been being have has had having do does did doing a an the and but
    if or because as until while of at by for with about against between into through during before after above
    below to from up down in out on off over under again further then once here there when where why how all any
    both each few more most other some such no nor not only own same so than too very s t can will just don don't
    should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn
    hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn
    wasn't weren weren't won won't wouldn wouldn't
""".split())

SKLEARN = frozenset("""
    a about above across after afterwards again against all almost alone along already also although always am among
    amongst amoungst amount an and another any anyhow anyone anything anyway anywhere are around as at back be
    became because become becomes becoming been before beforehand behind being below beside besides between beyond
    bill both bottom but by call can cannot cant co con could couldnt cry de describe detail do done down due during
    each eg eight either eleven else elsewhere empty enough etc even ever every everyone everything everywhere
    except few fifteen fifty fill find fire first five for former formerly forty found four from front full further
    get give go had has hasnt have he hence her here hereafter hereby herein hereupon hers herself him himself his
    how however hundred i ie if in inc indeed interest into is it its itself keep last latter latterly least less
    ltd made many may me meanwhile might mill mine more moreover most mostly move much must my myself name namely
    neither never nevertheless next nine no nobody none noone nor not nothing now nowhere of off often on once one
    only onto or other others otherwise our ours ourselves out over own part per perhaps please put rather re same
    see seem seemed seeming seems serious several she should show side since sincere six sixty so some somehow
    someone something sometime sometimes somewhere still such system take ten than that the their them themselves
    then thence there thereafter thereby therefore therein thereupon these they thick thin third this those though
    three through throughout thru thus to together too top toward towards twelve twenty two un under until up upon
    us very via was we well were what whatever when whence whenever where whereafter whereas whereby wherein
    whereupon wherever whether which while whither who whoever whole whom whose why will with within without would
    yet you your yours yourself yourselves
""".split())

# name -> words. "english" keeps its meaning from before the other lists existed: Lucene's.
BUILTIN = {"none": frozenset(), "english": LUCENE, "lucene": LUCENE, "nltk": NLTK, "sklearn": SKLEARN}


def describe() -> str:
    """The built-in lists for a message: each name with its size."""
    return ", ".join(f"{name} ({len(words)} words)" for name, words in BUILTIN.items())


def read_stopword_file(path: str) -> tuple[str, ...]:
    """The words of a stopword file: UTF-8, words separated by spaces or lines, ``#`` starting a comment to the end
    of its line (Lucene's and NLTK's files read as they are). ValueError with the reason, naming the file."""
    file = Path(path)
    try:
        if not file.is_file():
            raise ValueError(f"{path!r} is neither a built-in list nor a file")
        if file.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, not a stopword list")
        text = file.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    words = tuple(w for line in text.splitlines() for w in line.split("#", 1)[0].split())
    if not words:
        raise ValueError(f"{path}: holds no words")
    return words
