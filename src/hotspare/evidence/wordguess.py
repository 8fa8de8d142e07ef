"""The last resort of a log no line decides: which class its words read like.

When no pattern matched a failure or a success and no exit status is known (a log pasted into ``hotspare
classify``, a job whose status was lost), the rules have nothing to say and the verdict used to be ``unknown``.
Real logs from sources no rule was written for mostly end there: on the blind rounds, scored with the code each
session started from, a fifth of all verdicts (474 of 2,248) were such an ``unknown`` on a log labelled otherwise.

What such a log's words say is still worth something: "segmentation", "core", "dumped" read like a crash whatever
program printed them. This module keeps, for each word, how many labelled logs of each class hold it (the real
corpus, ``tests/data/real``) and scores a log's words as a naive Bayes classifier does: each word present adds
the log of its share in a class's logs. The class that scores best is the guess when its probability reaches
:data:`THRESHOLD`; below that the log stays ``unknown``. A guess names no host (it blames, excludes and probes
nothing) and its reason says it is a guess and which words weighed most.

Which class a bare log is before its words are read (the prior) is the share of each class among the corpus's
logs the rules leave bare, not among all its logs: a third to two thirds of bare logs are labelled ``unknown``
(nothing in them says why), against one log in seven of the whole corpus.

The counts are a snapshot, rebuilt on purpose (``python benchmarks/word_guess.py --write``), not on every corpus
change: a blind round's excerpts are scored with the snapshot that did not see them. The same script measures the
guess on logs it did not learn from.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hotspare.evidence.records import Evidence
from hotspare.failures import FailureClass

#: Where the shipped counts are.
MODEL_PATH = Path(__file__).with_name("wordguess.json")
#: A word: a letter, then two or more letters or underscores, after lower-casing (numbers, hex, punctuation and
#: one- or two-letter words carry no class).
WORD = re.compile(rb"[a-z][a-z_]{2,}")
#: The guess stands at this probability or above; below, the log stays ``unknown``. Chosen on the blind rounds of
#: six sessions, each read with the rules of the session's start and counts of the corpus before it
#: (``benchmarks/word_guess.py --sessions``).
THRESHOLD = 0.85
#: Additive smoothing of the word counts.
ALPHA = 1.0
#: Words held by fewer labelled logs than this are left out of the model (names, paths, one post's jargon).
MIN_LOGS = 2
#: A log with fewer known words than this is too short to read: two or three words make a confident guess of
#: nothing ('hello world' read like the success of an MPI hello-world run).
MIN_WORDS = 5
#: How many words the reason names.
SHOWN_WORDS = 4
#: Packs whose lines read any program's output (a Python traceback, a shell, generic wording), not one program's.
GENERIC_PACKS = frozenset({"generic", "kernel", "python"})


def left_to_words(evidence: Iterable[Evidence]) -> bool:
    """Whether the rules leave a log to its words: no pattern read a failure there, even one the rules then set
    aside (a SIGSEGV another process sent, a walltime epilogue under its request), nor a line of one program's own
    (a pack's: AMReX's abort message, ASPECT's termination) whose meaning the rules know. Generic context (a Python
    traceback, a shell prompt) leaves it to them."""
    return only_context((e.pattern, e.failure_class is not None) for e in evidence)


def only_context(read: Iterable[tuple[str, bool]]) -> bool:
    """:func:`left_to_words` on (pattern name, whether it read a failure class) pairs."""
    return not any(failed or pattern.partition(".")[0] not in GENERIC_PACKS for pattern, failed in read)


def words(text: bytes) -> frozenset[str]:
    """The distinct words of ``text`` (see :data:`WORD`)."""
    return frozenset(w.decode("ascii") for w in WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class Guess:
    """A class read from a log's words alone."""

    failure_class: FailureClass
    probability: float
    #: The words that weighed most for it against the runner-up class.
    words: tuple[str, ...]
    #: How many labelled logs the counts came from.
    logs: int

    @property
    def reason(self) -> str:
        said = ", ".join(repr(w) for w in self.words) or "no word in particular"
        return (f"no line decides and no exit status is known; its words read like {self.failure_class.value} "
                f"(a guess from the words of {self.logs:,} labelled logs, p={self.probability:.2f}: {said})")


class WordModel:
    """Per-class word counts, as log shares, ready to score a log."""

    def __init__(self, data: dict[str, object]) -> None:
        classes = data["classes"]
        logs = data["logs"]
        prior = data["prior"]
        totals = data["totals"]
        counts = data["words"]
        if not (isinstance(classes, list) and isinstance(logs, list) and isinstance(prior, list)
                and isinstance(totals, list) and isinstance(counts, dict)
                and len(classes) == len(logs) == len(prior) == len(totals)):
            raise ValueError("a word model needs classes, logs, prior and totals of one length, and words")
        self.classes = tuple(FailureClass(c) for c in classes)
        self.logs = sum(int(n) for n in logs)
        vocab = len(counts)
        whole = sum(int(n) for n in prior)
        self._prior = tuple(math.log(int(n) / whole) for n in prior)
        self._unseen = tuple(math.log(ALPHA / (int(t) + ALPHA * vocab)) for t in totals)
        self._word: dict[str, tuple[float, ...]] = {
            w: tuple(math.log((int(k) + ALPHA) / (int(t) + ALPHA * vocab)) for k, t in zip(row, totals, strict=True))
            for w, row in counts.items()
        }

    def scores(self, text: bytes) -> tuple[list[float], list[str]]:
        """Each class's log score and the words of ``text`` the model knows."""
        known = sorted(w for w in words(text) if w in self._word)
        scores = list(self._prior)
        for w in known:
            for i, lp in enumerate(self._word[w]):
                scores[i] += lp
        return scores, known

    def guess(self, text: bytes, threshold: float = THRESHOLD) -> Guess | None:
        """The class ``text``'s words read like, or None when none reaches ``threshold`` (or it is unknown)."""
        scores, known = self.scores(text)
        if len(known) < MIN_WORDS:
            return None
        order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        best, second = order[0], order[1]
        top = scores[best]
        probability = 1.0 / sum(math.exp(s - top) for s in scores)
        cls = self.classes[best]
        if probability < threshold or cls is FailureClass.UNKNOWN:
            return None
        weight = sorted(((self._word[w][best] - self._word[w][second], w) for w in known), reverse=True)
        shown = tuple(w for lift, w in weight[:SHOWN_WORDS] if lift > 0)
        return Guess(cls, probability, shown, self.logs)


def count(labelled: Iterable[tuple[str, str]]) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """How many logs of each class ``labelled`` (class, text) holds, and how many of each class hold each word."""
    logs: Counter[str] = Counter()
    held: dict[str, Counter[str]] = {}
    for cls, text in labelled:
        FailureClass(cls)  # a bad label fails here, not at load
        logs[cls] += 1
        for w in words(text.encode("utf-8")):
            held.setdefault(w, Counter())[cls] += 1
    return logs, held


def model_data(logs: Counter[str], held: dict[str, Counter[str]], *, bare: Mapping[str, int] | None = None,
               min_logs: int = MIN_LOGS) -> dict[str, object]:
    """What :class:`WordModel` reads, from :func:`count`'s counts: words held by fewer than ``min_logs`` logs left
    out; ``bare``, how many of the logs the rules leave bare are of each class (the prior; all logs when None)."""
    classes = sorted(c for c, n in logs.items() if n > 0)
    kept = {w: [c[k] for k in classes] for w, c in sorted(held.items()) if sum(c.values()) >= min_logs}
    totals = [sum(row[i] for row in kept.values()) for i in range(len(classes))]
    prior = [(bare.get(k, 0) if bare is not None else logs[k]) + 1 for k in classes]
    return {"classes": classes, "logs": [logs[k] for k in classes], "prior": prior, "totals": totals, "words": kept}


def build(labelled: Iterable[tuple[str, str]], *, bare: Mapping[str, int] | None = None,
          min_logs: int = MIN_LOGS) -> dict[str, object]:
    """The model of ``labelled`` (class, text) pairs, as :class:`WordModel` reads it (see :func:`model_data`)."""
    return model_data(*count(labelled), bare=bare, min_logs=min_logs)


@functools.cache
def load_model(path: Path = MODEL_PATH) -> WordModel:
    """The shipped model (read once)."""
    return WordModel(json.loads(path.read_text(encoding="utf-8")))


def guess(text: bytes) -> Guess | None:
    """The shipped model's guess for ``text`` (see :meth:`WordModel.guess`)."""
    return load_model().guess(text)
