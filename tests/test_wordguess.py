"""The last resort of a bare log (no exit status, no line decides): the class its words read like.

Unit tests build small models from a handful of labelled texts; the end-to-end ones run the shipped counts on
texts written for this file, in wordings no pattern reads."""

from __future__ import annotations

import json

import pytest

from conftest import load_benchmark
from hotspare import FailureClass, PatternSet, classify, load_patterns, scan
from hotspare.evidence import scan as scan_module
from hotspare.evidence import wordguess
from hotspare.evidence.scan import Scanner


@pytest.fixture(scope="module")
def patterns() -> PatternSet:
    return load_patterns()


def _tiny() -> wordguess.WordModel:
    """Two classes, each with a few logs of its own words, and a few unknown logs of plain chatter."""
    labelled = [
        ("oom", "allocation exhausted memory heap pages reclaim budget"),
        ("oom", "memory exhausted allocation budget heap arena"),
        ("oom", "heap arena memory allocation exhausted pages"),
        ("network", "peer handshake unreachable socket retrying route"),
        ("network", "socket peer route unreachable handshake link"),
        ("network", "handshake link socket peer unreachable retrying"),
        ("unknown", "started step stopped output nothing else here"),
        ("unknown", "output started nothing stopped here step"),
    ]
    return wordguess.WordModel(wordguess.build(labelled))


def test_the_words_of_a_class_read_like_it() -> None:
    model = _tiny()
    got = model.guess(b"the arena ran out: heap memory exhausted, allocation failed, budget gone")
    assert got is not None and got.failure_class is FailureClass.OOM and got.probability >= wordguess.THRESHOLD
    assert set(got.words) <= {"arena", "heap", "memory", "exhausted", "allocation", "budget"} and got.words
    assert "a guess from the words of 8 labelled logs" in got.reason and "oom" in got.reason
    got = model.guess(b"PEER HANDSHAKE failed: route unreachable, socket closed, link down")
    assert got is not None and got.failure_class is FailureClass.NETWORK


def test_no_guess_on_few_words_on_mixed_words_or_when_unknown_wins() -> None:
    model = _tiny()
    assert model.guess(b"heap memory") is None  # fewer than MIN_WORDS known words
    assert model.guess(b"heap memory arena socket peer route") is None  # no class reaches the threshold
    assert model.guess(b"started step stopped output nothing here") is None  # unknown wins: no guess


def test_the_threshold_is_the_least_probability() -> None:
    model = _tiny()
    text = b"heap memory arena allocation socket"
    _, known = model.scores(text)
    assert len(known) == 5
    loose = model.guess(text, threshold=0.0)
    assert loose is not None
    assert model.guess(text, threshold=min(1.0, loose.probability + 1e-9)) is None


def test_the_prior_is_the_bare_logs_shares() -> None:
    """The same words with a prior that makes unknown far likelier (most bare logs are unknown) guess nothing."""
    labelled = [("oom", "heap memory arena allocation exhausted"), ("unknown", "nothing here at all today"),
                ("oom", "heap memory arena allocation budget"), ("unknown", "nothing else here at all")]
    text = b"heap memory arena allocation exhausted nothing"
    even = wordguess.WordModel(wordguess.build(labelled))
    bare = wordguess.WordModel(wordguess.build(labelled, bare={"unknown": 10_000, "oom": 1}))
    assert even.guess(text, threshold=0.5) is not None
    assert bare.guess(text, threshold=0.5) is None


def test_a_model_missing_its_parts_is_refused() -> None:
    with pytest.raises(ValueError, match="classes, logs, prior and totals"):
        wordguess.WordModel({"classes": ["oom"], "logs": [1], "prior": [], "totals": [1], "words": {}})


@pytest.mark.parametrize(("text", "expected", "word"), [
    ("step 120 loss 0.31\nthe solver stopped with a segmantation fault, core dumped, backtrace shows frame #3\n",
     FailureClass.RANK_KILLED, "dumped"),
    ("usage: train.py [-h] --config CONFIG\nthe config key 'optimizer' is invalid: expected one of sgd, adam\n",
     FailureClass.USER_ERROR, "invalid"),
    ("worker 3 on node17 could not reach the coordinator: connection timed out after 30 s, retrying handshake\n"
     "peer node18 unreachable\n", FailureClass.NETWORK, "unreachable"),
    ("allocation of 4096 MiB on the accelerator did not fit; memory exhausted, reduce the batch size\n",
     FailureClass.OOM, "memory"),
])
def test_a_bare_log_gets_the_class_its_words_read_like(text: str, expected: FailureClass, word: str,
                                                       patterns: PatternSet) -> None:
    """Wordings no pattern reads: the rules leave the log bare, the words decide; no host is blamed, excluded or
    held as a lead, whatever hosts the text names."""
    result = scan(text.encode(), patterns)
    assert not any(e.failure_class is not None for e in result.evidence), result.evidence
    verdict = classify(result)
    assert verdict.failure_class is expected, verdict.reason
    assert verdict.retryable is expected.retryable
    assert "a guess from the words of" in verdict.reason and repr(word) in verdict.reason
    assert not verdict.blamed and not verdict.exclude_hosts and not verdict.suspect_hosts


def test_no_guess_with_an_exit_status_or_without_the_text(patterns: PatternSet) -> None:
    """A supervisor always knows the launcher's exit status: the guess never decides an attempt it acts on. Evidence
    passed without its scan (no sample) gets no guess either."""
    text = b"allocation of 4096 MiB on the accelerator did not fit; memory exhausted, reduce the batch size\n"
    result = scan(text, patterns)
    with_status = classify(result, rc=1)
    assert with_status.failure_class is FailureClass.UNKNOWN and "guess" not in with_status.reason
    assert classify(result.evidence).failure_class is FailureClass.UNKNOWN
    assert classify(scan(b"hello world\n", patterns)).failure_class is FailureClass.UNKNOWN


def test_the_sample_is_the_inputs_head_and_tail(patterns: PatternSet) -> None:
    """Small input whole, however it was fed; big input its first SAMPLE_HEAD and last SAMPLE_TAIL bytes."""
    small = b"".join(b"line %d of a small log\n" % i for i in range(200))
    scanner = Scanner(patterns)
    for i in range(0, len(small), 37):
        scanner.feed(small[i:i + 37])
    assert scanner.close().sample == small
    big = b"".join(b"line %06d of a big log\n" % i for i in range(20_000))
    assert len(big) > scan_module.SAMPLE_HEAD + scan_module.SAMPLE_TAIL
    for step in (4096, 1 << 20):
        scanner = Scanner(patterns)
        for i in range(0, len(big), step):
            scanner.feed(big[i:i + step])
        sample = scanner.close().sample
        assert sample == big[:scan_module.SAMPLE_HEAD] + big[-scan_module.SAMPLE_TAIL:]
    assert scan(big, patterns).sample == big[:scan_module.SAMPLE_HEAD] + big[-scan_module.SAMPLE_TAIL:]


def test_the_shipped_counts_load_and_name_every_class() -> None:
    model = wordguess.load_model()
    assert set(model.classes) == set(FailureClass)
    assert model.logs >= 8_000


def _round_file(directory, name: str, entries: list[tuple[str, str, str]]) -> None:  # type: ignore[no-untyped-def]
    blocks = []
    for ident, cls, text in entries:
        blocks.append(f'[[excerpt]]\nid = "{ident}"\nsource = "https://example.org/{ident}"\nlauncher = "none"\n'
                      f'family = "generic"\nclass = "{cls}"\norigin = []\ninnocent = []\nexclude = []\n'
                      f'retryable = {"true" if FailureClass(cls).retryable else "false"}\ntext = """{text}"""\n')
    (directory / name).write_text("\n".join(blocks), encoding="utf-8")


def test_the_benchmark_rebuilds_counts_and_guesses_each_file_from_the_others(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/word_guess.py on a corpus of three files: --write writes counts a WordModel loads (to --output,
    never the shipped file here), and leave-one-file-out guesses each file's bare logs from the two others."""
    bench = load_benchmark("word_guess.py")
    oom = "heap arena memory allocation exhausted budget pages\n"
    net = "peer handshake socket route unreachable link retrying\n"
    for i in range(3):
        _round_file(tmp_path, f"bench_heldout{900 + i}.toml", [
            (f"oom-{i}", "oom", oom), (f"net-{i}", "network", net), (f"quiet-{i}", "unknown", "nothing more\n")])
    out = tmp_path / "model.json"
    assert bench.main(["--corpus", str(tmp_path), "--write", "--output", str(out)]) == 0
    model = wordguess.WordModel(json.loads(out.read_text()))
    assert model.logs == 9 and set(model.classes) == {FailureClass.OOM, FailureClass.NETWORK, FailureClass.UNKNOWN}
    capsys.readouterr()
    assert bench.main(["--corpus", str(tmp_path), "--threshold", "0.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "bare n=9 of 9" in lines
    assert any(line.startswith("guess      class_right=1.000 ") for line in lines), lines
    assert any(line.startswith("baseline   class_right=0.333 ") for line in lines), lines


def test_no_success_guess_when_a_line_reports_a_non_zero_exit(patterns: PatternSet,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare log whose words read like a success is not called one when a line reports the run's non-zero exit in
    the usual words (heldout519); another class's guess still stands, and without that line the success does. A
    program's own such line (HTCondor's '(1) Normal termination (return value 8)') leaves nothing to the words."""
    ok = wordguess.Guess(FailureClass.SUCCESS, 0.99, ("completed",), 9)
    monkeypatch.setattr(wordguess, "guess", lambda sample: ok)
    said = scan(b"the run went through its steps and wrote its tables to out.csv\nexit code: 3\n", patterns)
    assert [e.pattern for e in said.evidence] == ["generic.nonzero_exit_reported"], said.evidence
    refused = classify(said)
    assert refused.failure_class is FailureClass.UNKNOWN and "guess" not in refused.reason, refused.reason
    monkeypatch.setattr(wordguess, "guess", lambda sample: wordguess.Guess(FailureClass.USER_ERROR, 0.9, (), 9))
    assert classify(said).failure_class is FailureClass.USER_ERROR
    monkeypatch.setattr(wordguess, "guess", lambda sample: ok)
    plain = scan(b"the run went through its steps and wrote its tables to out.csv as it was asked to do\n", patterns)
    assert classify(plain).failure_class is FailureClass.SUCCESS
    condor = scan(b"005 (180158.000.000) 03/10 16:40:26 Job terminated.\n    (1) Normal termination (return value 8)\n",
                  patterns)
    assert classify(condor).failure_class is FailureClass.UNKNOWN
