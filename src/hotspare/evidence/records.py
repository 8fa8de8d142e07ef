"""Evidence records: what a scan found, kept first-occurrence-with-count so
memory stays bounded however many ranks repeat a line."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hotspare.evidence.patterns import HostMeaning, Role
from hotspare.failures import FailureClass
from hotspare.hosts import Host

#: Distinct (pattern, host) records kept; beyond this only counts grow.
MAX_RECORDS = 20_000
#: Distinct texts kept for one root pattern on lines that name no host; beyond this, lines only count on the
#: pattern's first such record.
MAX_TEXTS = 8
#: Characters of a text that tell two root lines apart.
KEY_CHARS = 160

_DIGITS = b"0123456789"

#: A record's key: its pattern, and the host it names (its name, or the text where a host should be), or for a
#: host-less root line its text key (bytes: never a host name).
Key = tuple[str, str | bytes | None]


def text_key(text: bytes) -> bytes:
    """What tells two host-less root lines of one pattern apart: their text (as shown, UTF-8) without digits
    (ranks, steps, ids differ between copies of one line)."""
    return text.translate(None, _DIGITS)[:KEY_CHARS]


#: Patterns whose last line matters, not only their first: a repeat is recorded (Evidence.last_line) and the scanner
#: does not merely count it. A program's word that it finished is read only near the log's end
#: (classify._said_it_finished), and each rank of a job prints its own (64 ranks' 'FORTRAN STOP', a Gaussian job's
#: 'Normal termination' after each of its steps). custodian's start of each attempt is kept to its last as well
#: (classify._custodian_recovered: a failure before the last restart was corrected); it is no finished word. So is a
#: Dask worker's registration with its scheduler (classify._restarted_until_stopped: a worker back after a restart), nor
#: Open MPI's UCX finalize chatter (classify._said_it_finished: the library's teardown after the program's last word).
LAST_KEPT = frozenset({"generic.program_finished_words", "cp2k.program_stopped_in", "fortran.plain_stop",
                       "espresso.job_done", "python.mpi4py_bench_finished", "gromacs.thanks_quote",
                       "gromacs.mdrun_finished", "deepspeed.worker_exits_successfully", "namd.charm_end_of_program",
                       "hydra.cpi_finished", "hydra.mpich_test_no_errors", "charliecloud.mpihello_finalize_ok",
                       "ray.start_runtime_started",
                       "wrf.success_complete",
                       "alps.app_resources", "lammps.total_wall_time", "nwchem.total_times",
                       "nccl.tests_footer_bus_bandwidth", "hpl.end_of_tests", "hpcg.result_valid",
                       "python.openmm_install_check_passed", "python.hf_trainer_train_metrics",
                       "genomics.iqtree_date_and_time_finished", "genomics.mrbayes_analysis_completed",
                       "dealii.aspect_termination_requested", "opm.trailer_linear_iterations",
                       "pflotran.all_tests_passed", "mlperf.run_stop_success",
                       "openfoam.finalising_parallel_run", "imb.entering_mpi_finalize",
                       "stream.solution_validates", "ior.test_finished", "python.training_total_time_finished",
                       "python.dltutorial_optimization_complete", "python.ipython_time_magic_report",
                       "generic.vasp_general_timing", "nextflow.progress_process_done",
                       "custodian.attempt_started", "distributed.registered_to", "openmpi.ucx_finalize_disconnect"})


@dataclass(frozen=True, slots=True)
class Evidence:
    """A matched line: where, which pattern, what it says, which host it names."""

    line: int
    pattern: str
    role: Role
    failure_class: FailureClass | None
    host: Host | None
    host_text: str | None
    text: str
    #: How many lines matched the same pattern naming the same host.
    count: int = 1
    #: What the line says about the host it names (the pattern's ``host_means``).
    host_means: HostMeaning = HostMeaning.MENTION
    #: The line of the last repeat, where the scanner keeps it (a pattern whose last line matters, LAST_KEPT:
    #: a program's word that it finished, which each rank of a job prints); None when only one line matched.
    last_line: int | None = None

    @property
    def host_invalid(self) -> bool:
        """The pattern captured a host, but the text is not a usable host name."""
        return self.host_text is not None and self.host is None


@dataclass(frozen=True, slots=True)
class Progress:
    """The first and last progress lines seen (``step=N``, ``iter=N``)."""

    first_line: int
    last_line: int
    last_text: str
    last_step: int | None


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Everything one input yielded."""

    evidence: tuple[Evidence, ...]
    lines: int
    bytes_read: int
    progress: Progress | None = None
    truncated_lines: int = 0
    dropped_records: int = 0
    #: The input's first and last bytes (all of it when small; see :data:`hotspare.evidence.scan.SAMPLE_HEAD`):
    #: what the last resort reads when no line decides (:mod:`hotspare.evidence.wordguess`).
    sample: bytes = b""


@dataclass(slots=True)
class Records:
    """First occurrence of each (pattern, host), with counts; bounded.

    A root line that names no host is kept once per distinct text (:func:`text_key`, at most :data:`MAX_TEXTS`
    a pattern): the exception Python ignored in a destructor and the one that ended the run are both root lines
    of one pattern, and the classifier must see the second to set the first aside.
    """

    first: dict[Key, Evidence] = field(default_factory=dict)
    counts: dict[Key, int] = field(default_factory=dict)
    dropped: int = 0
    #: The keys first recorded at each (pattern, line), so a retraction costs one look-up.
    at_line: dict[tuple[str, int], list[Key]] = field(default_factory=dict)
    #: The text keys kept for each root pattern naming no host, first first.
    texts: dict[str, list[Key]] = field(default_factory=dict)
    #: The line of the last repeat of each key of a :data:`LAST_KEPT` pattern recorded again through :meth:`add`.
    last: dict[Key, int] = field(default_factory=dict)

    def key(self, pattern: str, role: Role, name: str | None, text: str | bytes) -> Key:
        """The key a line of ``pattern`` naming ``name`` (a host, its text, or None) with ``text`` (as shown; the
        scanner gives the line's bytes, stripped) is kept under."""
        if name is not None or role is not Role.ROOT:
            return (pattern, name)
        key = (pattern, text_key(text.encode("utf-8", "replace") if isinstance(text, str) else text))
        kept = self.texts.get(pattern)
        if kept is not None and len(kept) >= MAX_TEXTS and key not in self.counts:
            return kept[0]
        return key

    def add(self, ev: Evidence) -> None:
        key = self.key(ev.pattern, ev.role, ev.host.name if ev.host else ev.host_text, ev.text)
        if key not in self.first and isinstance(key[1], bytes):
            # A line rejoined with the next one (a wrapped paste) matched again: one line, one record.
            key = next((k for k in self.at_line.get((ev.pattern, ev.line), ()) if isinstance(k[1], bytes)), key)
        if key in self.first:
            self.counts[key] += 1
            if ev.pattern in LAST_KEPT:
                self.last[key] = ev.line
        elif len(self.first) < MAX_RECORDS:
            self.first[key] = ev
            self.counts[key] = 1
            self.at_line.setdefault((ev.pattern, ev.line), []).append(key)
            if isinstance(key[1], bytes):
                self.texts.setdefault(ev.pattern, []).append(key)
        else:
            self.dropped += 1

    def bump(self, key: Key) -> bool:
        """Count one more line for ``key`` if it is already kept (True), else change nothing (False)."""
        if key in self.counts:
            self.counts[key] += 1
            return True
        return False

    def bump_all(self, pattern: str, named: list[tuple[Host | None, str | None]]) -> bool:
        """:meth:`bump` for each (host, host text) a line names, only when every one is already kept."""
        keys = [(pattern, host.name if host else text) for host, text in named]
        if not all(key in self.counts for key in keys):
            return False
        for key in keys:
            self.counts[key] += 1
        return True

    def retract(self, pattern: str, line: int) -> None:
        """Forget what ``pattern`` recorded first at ``line`` (a fragment of a rejoined line), when that was
        its only occurrence; a record seen again elsewhere stays."""
        for key in self.at_line.pop((pattern, line), []):
            if self.counts.get(key) == 1:
                del self.first[key], self.counts[key]
                kept = self.texts.get(pattern)
                if kept is not None and key in kept:
                    kept.remove(key)

    def result(self) -> tuple[Evidence, ...]:
        out = [replace(ev, count=self.counts[key], last_line=self.last.get(key)) for key, ev in self.first.items()]
        return tuple(sorted(out, key=lambda e: e.line))
