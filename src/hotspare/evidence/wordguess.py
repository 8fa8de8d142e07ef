"""The last resort of a log no line decides: which class its words read like.

When no pattern matched a failure or a success and no exit status is known (a log pasted into ``hotspare
classify``, a job whose status was lost), the rules have nothing to say and the verdict used to be ``unknown``.
Real logs from sources no rule was written for mostly end there: on the blind rounds, scored with the code each
session started from, a fifth of all verdicts (474 of 2,248) were such an ``unknown`` on a log labelled otherwise.

What such a log's words say is still worth something: "segmentation", "core", "dumped" read like a crash whatever
program printed them. This module keeps a weight per word and class, learnt from the labelled logs of the real
corpus (``tests/data/real``) as a multinomial logistic regression over which words a log holds (each word present
adds its weights to the classes' scores; a softmax makes them probabilities). The class that scores best is the
guess when its probability reaches :data:`THRESHOLD`; below that the log stays ``unknown``. A guess names no host
(it blames, excludes and probes nothing) and its reason says it is a guess and which words weighed most.

The weights are learnt from every labelled log, but a bare log is not an average log: a third to two thirds of the
logs the rules leave bare are labelled ``unknown`` (nothing in them says why), against one log in seven of the
whole corpus. So each class's bias is moved by the log of its share among the bare logs over its share among all
(the prior of the logs the guess reads, not of those it learnt from).

Until 2026-12-06 the model was naive Bayes over the same words; on the corpus's bare logs, each guessed by a model
that did not learn its file (ten folds by file), it was right on 0.651 of them against 0.694 for the regression,
whose probabilities are also less sure of themselves on words that always come together.

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
from typing import Any

from hotspare.evidence.records import Evidence
from hotspare.failures import FailureClass

#: Where the shipped counts are.
MODEL_PATH = Path(__file__).with_name("wordguess.json")
#: A word: a letter, then two or more letters or underscores, after lower-casing (numbers, hex, punctuation and
#: one- or two-letter words carry no class).
WORD = re.compile(rb"[a-z][a-z_]{2,}")
#: The guess stands at this probability or above; below, the log stays ``unknown``. Chosen on the corpus's bare
#: logs, ten folds by file (``benchmarks/word_guess.py``: 0.5, 0.6, 0.7 and 0.85 tried), and checked on the blind
#: rounds of eight sessions, each read with the rules of the session's start and a model of the corpus before it
#: (``benchmarks/word_guess.py --sessions``).
THRESHOLD = 0.6
#: The L2 penalty on the weights (against the mean log loss), the passes of full-batch Adam and its step: enough
#: for the loss to settle on the corpus; learning is deterministic (zero start, one batch).
L2 = 1e-4
EPOCHS = 100
STEP = 0.05
#: Weights are kept to this many decimals; a word whose weights all round to zero is left out.
DECIMALS = 3
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
    """Per-word, per-class weights and a bias per class, ready to score a log."""

    def __init__(self, data: dict[str, object]) -> None:
        classes = data.get("classes")
        bias = data.get("bias")
        weights = data.get("words")
        logs = data.get("logs")
        if not (isinstance(classes, list) and isinstance(bias, list) and isinstance(weights, dict)
                and isinstance(logs, int) and classes and len(classes) == len(bias)
                and all(isinstance(row, list) and len(row) == len(classes) for row in weights.values())):
            raise ValueError("a word model needs classes, a bias per class, words with a weight per class, and logs")
        self.classes = tuple(FailureClass(c) for c in classes)
        self.logs = logs
        self._bias = tuple(float(b) for b in bias)
        self._word: dict[str, tuple[float, ...]] = {w: tuple(float(x) for x in row) for w, row in weights.items()}

    def scores(self, text: bytes) -> tuple[list[float], list[str]]:
        """Each class's score and the words of ``text`` the model knows."""
        known = sorted(w for w in words(text) if w in self._word)
        scores = list(self._bias)
        for w in known:
            for i, x in enumerate(self._word[w]):
                scores[i] += x
        return scores, known

    def guess(self, text: bytes, threshold: float = THRESHOLD) -> Guess | None:
        """The class ``text``'s words read like, or None when none reaches ``threshold`` (or it is unknown)."""
        scores, known = self.scores(text)
        if len(known) < MIN_WORDS or len(scores) < 2:
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


def build(labelled: Iterable[tuple[str, str]], *, bare: Mapping[str, int] | None = None,
          min_logs: int = MIN_LOGS) -> dict[str, object]:
    """The model of ``labelled`` (class, text) pairs, as :class:`WordModel` reads it: words held by fewer than
    ``min_logs`` logs left out; ``bare``, how many of the logs the rules leave bare are of each class (the biases
    are moved to their shares; none moved when None). Learning needs numpy (the ``dev`` extra); reading does not."""
    import numpy as np  # noqa: PLC0415 -- only to learn: the shipped model is read without numpy

    rows = []
    for cls, text in labelled:
        FailureClass(cls)  # a bad label fails here, not at load
        rows.append((cls, words(text.encode("utf-8"))))
    classes = sorted({cls for cls, _ in rows})
    held: Counter[str] = Counter(w for _, ws in rows for w in ws)
    vocab = sorted(w for w, n in held.items() if n >= min_logs)
    index = {w: i for i, w in enumerate(vocab)}
    docs = [sorted(index[w] for w in ws if w in index) for _, ws in rows]
    target = np.array([classes.index(cls) for cls, _ in rows], dtype=np.int64)
    n, k, v = len(rows), len(classes), len(vocab)
    flat = np.array([i for d in docs for i in d], dtype=np.int64)
    owner = np.repeat(np.arange(n), [len(d) for d in docs])
    onehot = np.zeros((n, k))
    onehot[np.arange(n), target] = 1.0
    weight, bias = np.zeros((v, k)), np.zeros(k)
    moments = [(np.zeros_like(weight), np.zeros_like(weight)), (np.zeros(k), np.zeros(k))]
    for epoch in range(1, EPOCHS + 1):
        z = np.zeros((n, k)) + bias
        np.add.at(z, owner, weight[flat])
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        d = (p - onehot) / n
        grad_w = L2 * weight
        np.add.at(grad_w, flat, d[owner])
        _adam(weight, grad_w, moments[0], epoch)
        _adam(bias, d.sum(axis=0), moments[1], epoch)
    shift = np.zeros(k)
    if bare is not None:
        every = np.bincount(target, minlength=k) + 1.0
        seen = np.array([bare.get(c, 0) + 1.0 for c in classes])
        shift = np.log(seen / seen.sum()) - np.log(every / every.sum())
    kept = {w: [round(float(x), DECIMALS) for x in weight[i]] for w, i in index.items()}
    return {"classes": classes, "logs": n, "bias": [round(float(x), DECIMALS) for x in bias + shift],
            "bare": {c: int(bare.get(c, 0)) for c in classes} if bare is not None else None,
            "words": {w: row for w, row in kept.items() if any(row)}}


def _adam(param: Any, grad: Any, moments: tuple[Any, Any], epoch: int) -> None:
    """One Adam step on the array ``param`` in place (and on its running mean and square of the gradient)."""
    mean, square = moments
    mean *= 0.9
    mean += 0.1 * grad
    square *= 0.999
    square += 0.001 * grad * grad
    param -= STEP * (mean / (1 - 0.9 ** epoch)) / ((square / (1 - 0.999 ** epoch)) ** 0.5 + 1e-8)


@functools.cache
def load_model(path: Path = MODEL_PATH) -> WordModel:
    """The shipped model (read once)."""
    return WordModel(json.loads(path.read_text(encoding="utf-8")))


def guess(text: bytes) -> Guess | None:
    """The shipped model's guess for ``text`` (see :meth:`WordModel.guess`)."""
    return load_model().guess(text)
