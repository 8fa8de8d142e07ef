"""The termination matrix: the rules from the seeds, one case each."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hotspare import ExitStatus, FailureClass, Host, PatternSet, SchedulerFacts, classify, expand_hosts, scan
from hotspare.evidence import wordguess
from hotspare.evidence.classify import _RANK_PREFIX, Verdict

SUNSPOT = "hsn.cm.sunspot.alcf.anl.gov"
AURORA = "hsn.cm.aurora.alcf.anl.gov"


def verdict(text: str, patterns: PatternSet, **kw) -> Verdict:  # type: ignore[no-untyped-def]
    return classify(scan(text.encode(), patterns), **kw)


def rules_verdict(text: str, patterns: PatternSet) -> Verdict:
    """The verdict of the rules alone: the scan's sample cleared, so a bare log is not left to the words guess."""
    return classify(replace(scan(text.encode(), patterns), sample=b""))


def names(hosts: tuple[Host, ...]) -> list[str]:
    return [h.name for h in hosts]


def test_sigkilled_rank_names_its_host_and_cascade_never_blames(patterns: PatternSet) -> None:
    """ezpz job 12473749: the signal-9 rank's host is blamed, the signal-15 survivor is only mentioned."""
    v = verdict(
        f"x1921c7s1b0n0-hsn0.{SUNSPOT}: rank 12 died from signal 9\n"
        f"x1921c7s0b0n0-hsn0.{SUNSPOT}: rank 1 died from signal 15\n",
        patterns, rc=143,
    )
    assert v.failure_class is FailureClass.RANK_KILLED
    assert names(v.blamed_hosts) == ["x1921c7s1b0n0"]
    assert names(v.exclude_hosts) == ["x1921c7s1b0n0"]
    assert names(v.mentioned_hosts) == ["x1921c7s0b0n0"]
    assert v.retryable
    assert v.blamed[0].evidence[0].line == 1


def test_first_root_wins_over_later_cascade_noise(patterns: PatternSet) -> None:
    """Thousands of teardown lines after the root line do not change the verdict."""
    noise = "".join(f"x1000c0s{i % 8}b0n0: rank {i} died from signal 15\nrank {i} died from signal 11\n" for i in range(2000))
    v = verdict("srun: error: Node failure on nid[003]\n" + noise, patterns, rc=1)
    assert v.failure_class is FailureClass.NODE_LOSS
    assert names(v.blamed_hosts) == ["nid003"]


def test_only_cascade_lines_blame_nobody(patterns: PatternSet) -> None:
    """Signal 11/15 teardown lines alone name no culprit."""
    v = verdict(f"x1921c1s4b0n0-hsn0.{SUNSPOT}: rank 0 died from signal 15\nrank 1304 died from signal 11\n", patterns, rc=143)
    assert v.failure_class is FailureClass.UNKNOWN
    assert v.blamed_hosts == () and v.exclude_hosts == ()


def test_enospc_on_a_parallel_filesystem_is_transient_and_excludes_nobody(patterns: PatternSet) -> None:
    """ezpz job 12473704 attempt 2: ENOSPC re-raised on every rank, then host-named teardown: retry, no exclusion."""
    v = verdict(
        "[rank23]: OSError: [Errno 28] No space left on device\n\n"
        f"x1921c1s1b0n0-hsn0.{SUNSPOT}: rank 16 exited with code 1\n"
        f"x1921c1s4b0n0-hsn0.{SUNSPOT}: rank 0 died from signal 15\n",
        patterns, rc=143,
    )
    assert v.failure_class is FailureClass.TRANSIENT_IO
    assert v.retryable
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert set(names(v.mentioned_hosts)) == {"x1921c1s1b0n0", "x1921c1s4b0n0"}


def test_edquot_is_transient(patterns: PatternSet) -> None:
    """Quota exceeded is storage, retryable, nobody excluded."""
    v = verdict("OSError: [Errno 122] Disk quota exceeded: '/lus/x'\n", patterns, rc=1)
    assert v.failure_class is FailureClass.TRANSIENT_IO and v.retryable and not v.exclude_hosts


@pytest.mark.parametrize("rc", [143, -15])
def test_exit_143_without_walltime_evidence_is_not_walltime(patterns: PatternSet, rc: int) -> None:
    """ezpz #243: a std::bad_alloc ending in exit 143 is OOM, not walltime; bare 143 is unknown."""
    assert verdict("[rank5141]: MemoryError: std::bad_alloc\n", patterns, rc=rc).failure_class is FailureClass.OOM
    bare = verdict("training...\n", patterns, rc=rc)
    assert bare.failure_class is FailureClass.UNKNOWN
    assert "SIGTERM" in bare.reason


def test_walltime_needs_evidence(patterns: PatternSet) -> None:
    """A time-limit line makes exit 143 walltime, not retryable, nobody blamed even though it names a host."""
    v = verdict(
        "slurmstepd-n4: error: *** JOB 19 ON n4 CANCELLED AT 2026-11-29T09:34:47 DUE TO TIME LIMIT ***\n"
        "srun: error: n4: task 0: Terminated\n",
        patterns, rc=143,
    )
    assert v.failure_class is FailureClass.WALLTIME
    assert not v.retryable and v.blamed_hosts == ()
    assert classify([], rc=143, facts=SchedulerFacts(job_state="TIMEOUT")).failure_class is FailureClass.WALLTIME


@pytest.mark.parametrize(
    "line",
    ["SyntaxError: invalid syntax", "ModuleNotFoundError: No module named 'torchtitan'", "ImportError: cannot import name 'x'"],
)
def test_startup_errors_are_user_errors_at_any_point(patterns: PatternSet, line: str) -> None:
    """Syntax/import errors are user_error, not retryable, before progress and after it (issue 20: a module
    imported lazily mid-run is as missing on every node)."""
    before = verdict(f"Traceback (most recent call last):\n{line}\n", patterns, rc=1)
    assert before.failure_class is FailureClass.USER_ERROR and not before.retryable
    after = verdict(f"step=1 loss=3\nstep=2 loss=2\n{line}\n", patterns, rc=1)
    assert after.failure_class is FailureClass.USER_ERROR and "after progress" in after.reason


def test_no_host_named_means_nobody_blamed(patterns: PatternSet) -> None:
    """ezpz attempt 1: a SIGKILL that leaves the log mid-training names nobody: never guess."""
    v = verdict("[17:29:55][I] iter=42 epoch=0\n", patterns, rc=-9)
    assert v.failure_class is FailureClass.UNKNOWN
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert v.retryable


def test_hosts_outside_the_allocation_are_foreign_never_blamed(patterns: PatternSet) -> None:
    """A root line naming a host not in the allocation reports it foreign and blames nobody."""
    v = verdict("srun: error: Node failure on n9\n", patterns, rc=1, allocation=expand_hosts("n[1-4]"))
    assert names(v.foreign_hosts) == ["n9"]
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert v.failure_class is FailureClass.NODE_LOSS


def test_allocation_in_other_form_still_blames(patterns: PatternSet) -> None:
    """An allocation written with -hsn0 FQDNs matches the log's plain form."""
    alloc = [Host(f"x1921c7s{i}b0n0-hsn0.{SUNSPOT}") for i in range(4)]
    v = verdict("x1921c7s1b0n0: shepherd died from signal 9\n", patterns, rc=1, allocation=alloc)
    assert v.blamed_hosts == (alloc[1],)


def test_survivor_cancellation_line_never_blames_its_reporter(patterns: PatternSet) -> None:
    """slurmstepd-n1's 'CANCELLED ... DUE TO NODE FAILURE' alone is node_loss with nobody blamed."""
    v = verdict(
        "slurmstepd-n1: error: *** STEP 4.0 ON n1 CANCELLED AT 2026-11-29T09:28:02 DUE TO NODE FAILURE, SEE SLURMCTLD LOG ***\n",
        patterns, rc=143,
    )
    assert v.failure_class is FailureClass.NODE_LOSS
    assert v.blamed_hosts == ()
    assert names(v.mentioned_hosts) == ["n1"]


def test_scheduler_attributes_a_node_loss_no_line_names(patterns: PatternSet) -> None:
    """With a DOWN node from the scheduler, an unattributed node loss blames that node (reason 'scheduler')."""
    facts = SchedulerFacts(job_state="NODE_FAIL", node_states={Host("n2"): "DOWN*", Host("n1"): "ALLOCATED"})
    v = verdict("slurmstepd-n1: error: *** STEP 4.0 ON n1 CANCELLED AT 2026 DUE TO NODE FAILURE ***\n",
                patterns, rc=143, facts=facts, allocation=expand_hosts("n[1-3]"))
    assert names(v.blamed_hosts) == ["n2"]
    assert v.blamed[0].reason == "scheduler"
    assert "scheduler reports n2 down" in v.reason


def test_scheduler_alone_never_blames_when_the_failure_is_not_a_node_fault(patterns: PatternSet) -> None:
    """A DOWN node does not turn an ENOSPC failure into a node fault."""
    facts = SchedulerFacts(node_states={Host("n2"): "DOWN"})
    v = verdict("OSError: [Errno 28] No space left on device\n", patterns, rc=1, facts=facts)
    assert v.failure_class is FailureClass.TRANSIENT_IO and v.blamed_hosts == ()


def test_oom_explains_killed_ranks(patterns: PatternSet) -> None:
    """Ranks SIGKILLed by the OOM killer are an OOM, not a node fault: the OOM started on n2, nobody is excluded."""
    v = verdict("Out of memory: Killed process 4242 (python)\nsrun: error: n2: task 1: Killed\n", patterns, rc=137)
    assert v.failure_class is FailureClass.OOM
    assert v.blamed_hosts == (Host("n2"),) and v.exclude_hosts == ()


def test_oom_count_below_a_time_limit_decides_when_tasks_died_before_it(patterns: PatternSet) -> None:
    """slurmstepd prints the step's OOM-kill count once its tasks ended, below the time-limit line: tasks killed
    before the limit, with no progress after, make it an OOM; without those deaths the limit decides."""
    killed = "/var/spool/slurmd/job7/slurm_script: line 18: 2307 Killed                  worker --file=w.json\n"
    tail = ("slurmstepd-n5: error: *** JOB 7 ON n5 CANCELLED AT 2018-07-05T05:27:19 DUE TO TIME LIMIT ***\n"
            "slurmstepd-n5: error: Detected 49 oom-kill event(s) in step 7.batch cgroup.\n")
    v = verdict(killed + tail, patterns)
    assert v.failure_class is FailureClass.OOM
    assert verdict(tail, patterns).failure_class is FailureClass.WALLTIME


def test_a_broken_pipe_after_a_cancellation_is_its_teardown(patterns: PatternSet) -> None:
    """scancel's SIGTERM breaks the worker's connections and the broken pipe follows the CANCELLED line: the
    cancellation decides; the same broken pipe with no cancel before it is the network's."""
    pipe = ("Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.6/multiprocessing/connection.py", line 368, in _send\n'
            "    n = write(self._handle, buf)\n"
            "BrokenPipeError: [Errno 32] Broken pipe\n")
    cancel = "slurmstepd: error: *** JOB 2 ON c1 CANCELLED AT 2020-02-20T10:05:27 ***\n"
    alone = verdict(pipe, patterns).failure_class
    assert alone is FailureClass.NETWORK
    assert verdict(cancel + pipe, patterns).failure_class is FailureClass.CANCELLED
    assert verdict(pipe + cancel, patterns).failure_class is alone


def test_a_proxy_that_would_not_start_on_the_launchers_own_host_names_no_far_end(patterns: PatternSet) -> None:
    """Hydra's 'unable to run bstrap_proxy on H' from '[mpiexec@H]' itself had no network between hosts in it: no
    network verdict, nobody blamed; on another host it is network trouble with that host as the lead."""
    line = ("[mpiexec@{me}] check_exit_codes (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:117): "
            "unable to run bstrap_proxy on {far} (pid 23070, exit code 65280)\n")
    own = verdict(line.format(me="cn-1", far="cn-1"), patterns)
    assert own.failure_class is FailureClass.UNKNOWN and own.blamed_hosts == ()
    other = verdict(line.format(me="cn-1", far="cn-2"), patterns)
    assert other.failure_class is FailureClass.NETWORK and [h.name for h in other.suspect_hosts] == ["cn-2"]


def test_nccl_error_quoting_a_cuda_oom_as_its_last_error_is_oom(patterns: PatternSet) -> None:
    """PyTorch's 'unhandled cuda error' whose 'Last error:' is NCCL's CUDA 'out of memory': the allocation decides."""
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, unhandled cuda error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 2 'out of memory'\n")
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is FailureClass.OOM and v.blamed_hosts == ()
    far = text.replace("Last error:\n", "Last error:\n" + "step 1\n" * 6)
    assert verdict(far, patterns, rc=1).failure_class is FailureClass.NETWORK


def test_nccl_relay_yields_to_nccls_own_cuda_oom_warning_anywhere(patterns: PatternSet) -> None:
    """NCCL's own WARN of a failed CUDA allocation, pasted apart from the traceback that relays the NCCL result
    ('unhandled cuda error', 'internal error'), decides wherever it is; a relay of 'unhandled system error' does not
    yield to it."""
    relay = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1296, internal error - please "
             "report this issue to the NCCL developers, NCCL version 2.18.1\n")
    debug = "".join(f"note {i}\n" for i in range(8)) + (
        "gpu7:2134736:2285781 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n")
    assert verdict(relay + debug, patterns, rc=1).failure_class is FailureClass.OOM
    cuda = relay.replace("internal error - please report this issue to the NCCL developers", "unhandled cuda error")
    assert verdict(cuda + debug, patterns, rc=1).failure_class is FailureClass.OOM
    system = relay.replace("internal error - please report this issue to the NCCL developers", "unhandled system error")
    assert verdict(system + debug, patterns, rc=1).failure_class is FailureClass.NETWORK


def test_nccl_error_quoting_a_gpu_fault_as_its_last_error_is_gpu_hw(patterns: PatternSet) -> None:
    """The same relay whose 'Last error:' is the GPU's own fault ('unspecified launch failure'): the GPU decides."""
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, unhandled cuda error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
            "Cuda failure 'unspecified launch failure'\n")
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is FailureClass.GPU_HW and v.blamed_hosts == ()
    far = text.replace("Last error:\n", "Last error:\n" + "step 1\n" * 6)
    assert verdict(far, patterns, rc=1).failure_class is FailureClass.NETWORK


def test_nccl_error_quoting_a_kernels_illegal_address_is_not_network(patterns: PatternSet) -> None:
    """The same relay whose 'Last error:' is a kernel's illegal memory access (NCCL's "Cuda failure 700 '...'"): the
    program's kernel faulted before NCCL's CUDA call, so no network fault is read and nobody is blamed; an 'unhandled
    system error' relay is not read so."""
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled cuda error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
            "Cuda failure 700 'an illegal memory access was encountered'\n")
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == ()
    system = text.replace("unhandled cuda error", "unhandled system error")
    assert verdict(system, patterns, rc=1).failure_class is FailureClass.NETWORK
    far = text.replace("Last error:\n", "Last error:\n" + "step 1\n" * 6)
    assert verdict(far, patterns, rc=1).failure_class is FailureClass.NETWORK


def test_programming_error_whose_message_is_a_kernels_illegal_address_is_not_user_error(patterns: PatternSet) -> None:
    """A traceback's last line of a programming-error type whose message is the driver's report of a kernel's memory
    fault (old jaxlib raised StreamExecutor's 'Internal: Failed to launch CUDA kernel: CUDA_ERROR_ILLEGAL_ADDRESS' as
    a ValueError): the fault decides as a bare illegal address, unknown with nobody blamed; the same type with a
    message of its own, or a device-side assert (the program's index check), stays the user's error."""
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 20, in <module>\n"
            "    opt_state = step(i, opt_state, batch)\n"
            "ValueError: Internal: Failed to launch CUDA kernel: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access "
            "was encountered\n")
    v = verdict(text, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == ()
    own = text.replace("Internal: Failed to launch CUDA kernel: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access "
                       "was encountered", "too many values to unpack (expected 2)")
    assert verdict(own, patterns).failure_class is FailureClass.USER_ERROR
    assert_ = text.replace("ValueError: Internal: Failed to launch CUDA kernel: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal "
                           "memory access was encountered", "AssertionError: CUDA error: device-side assert triggered")
    assert verdict(assert_, patterns).failure_class is FailureClass.USER_ERROR


def test_tf_session_relay_quoting_a_storage_failure_is_transient_io(patterns: PatternSet) -> None:
    """TensorFlow's 'This may be due to a preemption ... Error: %s' relays the error it caught; a checkpoint upload
    the store kept refusing, quoted below it, decides. Alone, or quoting nothing known, the relay stays network."""
    head = ("INFO:tensorflow:An error was raised. This may be due to a preemption in a connected worker or parameter "
            "server. The current session will be closed and a new session will be created. Error: From "
            "/job:worker/replica:0/task:1:\n")
    quoted = ("All 10 retry attempts failed. The last failure: Unavailable: Error executing an HTTP request: HTTP "
              "response code 503\n         when resuming upload gs://bkt/model.ckpt-60_temp_8381/\n")
    v = verdict(head + quoted, patterns, rc=1)
    assert v.failure_class is FailureClass.TRANSIENT_IO and v.blamed_hosts == ()
    assert verdict(head + "Socket closed\n", patterns, rc=1).failure_class is FailureClass.NETWORK
    far = head + "step 1\n" * 6 + quoted
    assert verdict(far, patterns, rc=1).failure_class is FailureClass.NETWORK


def test_segfault_then_teardown_blames_origin_excludes_nobody(patterns: PatternSet) -> None:
    """A segfault on A, then the launcher's SIGTERM to every other rank: A is where it started; no node is at fault."""
    log = (
        "srun: error: n2: task 3: Segmentation fault (core dumped)\n"
        "slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT 2026-11-29T09:28:02 ***\n"
        "srun: error: n1: tasks 0-1: Terminated\n"
        "srun: error: n3: task 4: Terminated\n"
        "srun: error: n4: task 5: Segmentation fault (core dumped)\n"
    )
    v = verdict(log, patterns, rc=139, allocation=[Host(f"n{i}") for i in range(1, 5)])
    assert v.failure_class is FailureClass.RANK_KILLED and v.crash and not v.node_fault
    assert v.blamed_hosts == (Host("n2"),)
    assert v.exclude_hosts == ()


def test_a_fault_signal_sent_by_another_process_is_no_crash(patterns: PatternSet) -> None:
    """Open MPI's handler prints 'Signal code:  (0)' (SI_USER) when the SIGSEGV was kill()ed into the process (a
    `timeout -s SEGV`): no fault of that host, so it names no origin; a real fault ('Address not mapped (1)') does."""
    head = "[n3:02612] *** Process received signal ***\n[n3:02612] Signal: Segmentation fault (11)\n"
    sent = verdict(head + "[n3:02612] Signal code:  (0)\n[n3:02612] Failing at address: 0x10af00000a33\n", patterns)
    assert sent.blamed_hosts == () and sent.exclude_hosts == (), sent.reason
    assert sent.failure_class is not FailureClass.RANK_KILLED, sent.reason
    fault = verdict(head + "[n3:02612] Signal code: Address not mapped (1)\n[n3:02612] Failing at address: 0x8\n",
                    patterns)
    assert fault.failure_class is FailureClass.RANK_KILLED and names(fault.blamed_hosts) == ["n3"], fault.reason
    # Another host's SI_USER line says nothing of this host's crash.
    other = verdict(head + "[n4:02613] Signal code:  (0)\n", patterns)
    assert names(other.blamed_hosts) == ["n3"], other.reason


def test_a_transport_librarys_io_status_is_no_storage_fault(patterns: PatternSet) -> None:
    """UCX prints its status UCS_ERR_IO_ERROR as 'Input/output error': on its own lines that is a failed transport
    operation, so the rank's abort after it decides (its node the origin); the same words from a file tool stay a
    storage fault."""
    ucx = ("0: [1580334918.341467] [c9:43722:2]       ucp_rkey.c:266  UCX  ERROR failed to unpack remote key from "
           "remote md[5]: Input/output error\n"
           "0: [c9:43722:2:43760]        rndv.c:943  Fatal: failed to unpack rendezvous remote key received from "
           "<no debug data>: Input/output error\n"
           "srun: error: c9: task 0: Aborted\n"
           "srun: error: c9: task 1: Terminated\n")
    v = verdict(ucx, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and names(v.blamed_hosts) == ["c9"], v.reason
    tool = verdict("cp: error writing '/lus/x/ckpt.pt': Input/output error\nsrun: error: c9: task 0: Exited with exit"
                   " code 1\n", patterns)
    assert tool.failure_class is FailureClass.TRANSIENT_IO, tool.reason


def test_ucx_device_query_errno_text_is_no_full_disk(patterns: PatternSet) -> None:
    """UCX's uct_ib_query_device prints 'ibv_exp_query_device(%s) returned %d: %m': the strerror is whatever errno
    held, not the call's result, so 'No space left on device' there is no full file system; the LSF owner's kill
    after it decides (heldout646). The same words from a file write stay a storage fault."""
    log = ("[1727009458.248641] [b07u33a:533569:0]       ib_verbs.h:84   UCX  ERROR ibv_exp_query_device(mlx5_0) "
           "returned 38: No space left on device\n"
           "TERM_OWNER: job killed by owner.\n"
           "Exited with exit code 1.\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.CANCELLED and not v.blamed_hosts, v.reason
    disk = verdict("cp: error writing '/lus/x/ckpt.pt': No space left on device\nTERM_OWNER: job killed by owner.\n",
                   patterns)
    assert disk.failure_class is FailureClass.TRANSIENT_IO, disk.reason


def test_a_fortran_runtimes_io_error_while_it_ends_a_crashed_rank_is_the_crash(patterns: PatternSet) -> None:
    """Intel Fortran's runtime closes its units as it ends a rank whose SIGSEGV it reported: a CLOSE error on the
    lines after its crash report is that exit, so the crash decides (its rank's host the origin); the same CLOSE
    error with no crash before it stays a storage fault."""
    crash = ("forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
             "forrtl: severe (66): output statement overflows record, unit -1, file \"Unknown\"\n"
             "forrtl: severe (28): CLOSE error, unit 50, file \"Unknown\"\n"
             "nid002837: rank 384 exited with code 174\n"
             "forrtl: error (78): process killed (SIGTERM)\n")
    v = verdict(crash, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED, v.reason
    alone = verdict("forrtl: severe (28): CLOSE error, unit 50, file \"Unknown\"\n"
                    "nid002837: rank 384 exited with code 28\n", patterns)
    assert alone.failure_class is FailureClass.TRANSIENT_IO, alone.reason


def test_a_crash_handlers_mpi_abort_is_the_crash(patterns: PatternSet) -> None:
    """Runtimes that trap a crash signal end the job with MPI_Abort (Charm++, PETSc): the crash came first and
    decides; the same MPI_Abort with no crash before it is the program's own stop."""
    crash = "[0]PETSC ERROR: Caught signal number 11 SEGV: Segmentation Violation, probably memory access out of range\n"
    abort = "application called MPI_Abort(MPI_COMM_WORLD, 59) - process 0\n"
    v = verdict(crash + abort, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and v.crash and not v.node_fault
    assert verdict(abort, patterns).failure_class is FailureClass.USER_ERROR


def test_an_abort_through_the_programs_own_abort_routine_is_its_stop(patterns: PatternSet) -> None:
    """A SIGABRT whose traceback shows the program's own abort routine (CESM/E3SM's shr_abort_abort, which ends in
    abort()) is the program stopping itself: the abort line before the frame does not make it a crash. A crash of
    another signal before the same frame is still the crash."""
    frame = " 3561: e3sm.exe           00000000014089A5  shr_abort_mod_mp_          69  shr_abort_mod.F90\n"
    abort = " 3561: forrtl: error (76): Abort trap signal\n"
    v = verdict(abort + frame, patterns)
    assert v.failure_class is FailureClass.USER_ERROR and v.blamed_hosts == ()
    segv = " 3561: forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
    assert verdict(segv + frame, patterns).failure_class is FailureClass.RANK_KILLED


def test_an_atp_crash_report_whose_walkback_passes_through_mpi_abort_is_the_programs_stop(patterns: PatternSet) -> None:
    """Cray ATP reports the SIGABRT MPI_Abort raises as a crash ('Application N is crashing', 'Process died with
    signal 6'): when the walkback it prints goes through MPI_Abort, the rank stopped itself and the program's own
    MPI_Abort decides, wherever the banner landed; the SIGKILLs of the other PEs are the teardown. The same banner
    over a walkback without MPI_Abort is a crash first."""
    banner = "Application 196964917 is crashing. ATP analysis proceeding...\n"
    abort = ("Rank 320 [Mon Jun  5 15:40:06 2023] [c7-2c0s8n3] application called MPI_Abort(MPI_COMM_WORLD, 60)"
             " - process 320\n")
    walkback = ("ATP Stack walkback for Rank 320 starting:\n  main@nemo.f90:18\n  ctl_stop$lib_mpp_@lib_mpp.F90:1722\n"
                "  mpi_abort__@0x56024bc\n  MPI_Abort@0x55f97ed\n  abort@abort.c:92\nATP Stack walkback for Rank 320 done\n"
                "Process died with signal 6: 'Aborted'\n")
    kill = ("_pmiu_daemon(SIGCHLD): [NID 06768] [c7-2c0s12n0] [Mon Jun  5 15:41:51 2023] PE RANK 342 exit signal Killed\n")
    v = verdict(banner + abort + walkback + kill, patterns)
    assert v.failure_class is FailureClass.USER_ERROR and v.blamed_hosts == () and v.exclude_hosts == ()
    crash = ("ATP Stack walkback for Rank 320 starting:\n  main@nemo.f90:18\nATP Stack walkback for Rank 320 done\n"
             "Process died with signal 11: 'Segmentation fault'\n")
    assert verdict(banner + abort + crash, patterns).failure_class is FailureClass.RANK_KILLED


def test_node_fault_blames_and_excludes(patterns: PatternSet) -> None:
    """A node the launcher says failed is both the origin and the host to keep out."""
    v = verdict("srun: error: Node failure on n3\nsrun: error: n1: task 0: Terminated\n", patterns, rc=1,
                allocation=[Host(f"n{i}") for i in range(1, 4)])
    assert v.blamed_hosts == (Host("n3"),) and v.exclude_hosts == (Host("n3"),)


def test_walltime_line_names_no_origin(patterns: PatternSet) -> None:
    """A time limit starts nowhere: the host that printed it is not blamed."""
    log = "slurmstepd-n4: error: *** JOB 19 ON n4 CANCELLED AT 2026-11-29T09:34:47 DUE TO TIME LIMIT ***\n"
    v = verdict(log, patterns, rc=143)
    assert v.failure_class is FailureClass.WALLTIME and v.blamed_hosts == () and v.exclude_hosts == ()


def test_a_launchers_time_limit_explains_the_ranks_srun_then_reports_killed(patterns: PatternSet) -> None:
    """mpirun's own time limit (MPIEXEC_TIMEOUT) aborts the job; srun's 'Killed' for a task after it is that stop's
    SIGKILL, as after a cancellation: the time limit is the class and nobody is blamed (users list, heldout149)."""
    log = ("The user-provided time limit for job execution has been reached:\n\n  MPIEXEC_TIMEOUT: 8 seconds\n\n"
           "srun: error: n2: task 0: Killed\nsrun: Terminating job step 689585.2\n")
    v = verdict(log, patterns, rc=137, allocation=expand_hosts("n[1-2]"))
    assert v.failure_class is FailureClass.WALLTIME
    assert v.blamed_hosts == () and v.exclude_hosts == ()


def test_every_host_killed_names_no_victim(patterns: PatternSet) -> None:
    """Killed ranks on every host of the job (a job-wide kill) blame nobody."""
    text = "srun: error: n2: task 1: Killed\nsrun: error: n1: task 0: Killed\n"
    assert verdict(text, patterns, rc=137).blamed_hosts == ()
    assert verdict(text, patterns, rc=137, allocation=expand_hosts("n[1-2]")).blamed_hosts == ()
    # With a third active host that was not killed, the two killed hosts are the victims.
    three = verdict(text, patterns, rc=137, allocation=expand_hosts("n[1-3]"))
    assert names(three.blamed_hosts) == ["n2", "n1"]


def test_invalid_host_text_is_never_blamed(patterns: PatternSet) -> None:
    """A root line whose host field is not a host name blames nobody."""
    v = verdict("srun: error: Node failure on n1;reboot\n", patterns, rc=1)
    assert v.blamed_hosts == ()


def test_success(patterns: PatternSet) -> None:
    """Exit 0 with clean per-rank exits is success."""
    v = verdict("x1: rank 0 exited with code 0\n", patterns, rc=0)
    assert v.failure_class is FailureClass.SUCCESS and not v.retryable


def test_sigint_is_cancelled(patterns: PatternSet) -> None:
    """Exit 130 (SIGINT) with nothing else is cancelled, not retried."""
    v = verdict("", patterns, rc=130)
    assert v.failure_class is FailureClass.CANCELLED and not v.retryable


@pytest.mark.parametrize(
    ("rc", "code", "sig"),
    [(0, 0, None), (1, 1, None), (137, None, 9), (143, None, 15), (-9, None, 9), (-15, None, 15), (255, 255, None)],
)
def test_exit_status_reading(rc: int, code: int | None, sig: int | None) -> None:
    """Return codes: negative is Popen's signal, 129..192 the shell's 128+N, the rest exit codes."""
    status = ExitStatus.from_rc(rc)
    assert (status.code, status.signal) == (code, sig)


def test_every_failure_class_has_an_operational_meaning() -> None:
    """Each class answers retry? and exclude?; only node faults exclude hosts."""
    excluding = {c for c in FailureClass if c.excludes_hosts}
    assert excluding == {FailureClass.NODE_LOSS, FailureClass.RANK_KILLED, FailureClass.GPU_HW}
    assert not FailureClass.USER_ERROR.retryable and FailureClass.TRANSIENT_IO.retryable
    assert len(FailureClass) == 12


def test_open_mpi_lost_daemon_forms(patterns: PatternSet) -> None:
    """ORTE 1.x-3.x names the lost node on a 'hostname:' row under its heading; a stray row names nobody."""
    block = (
        "ORTE has lost communication with its daemon located on node:\n\n  hostname:  slwrk-067\n\n"
        "This is usually due to either a failure of the TCP network\n"
    )
    v = verdict(block, patterns, rc=1)
    # A lost connection names a lead, not a dead node (issue 13): a suspect, probed by the supervisor, never blamed.
    assert v.failure_class is FailureClass.NODE_LOSS and v.blamed_hosts == ()
    assert names(v.suspect_hosts) == ["slwrk-067"]
    assert verdict("  hostname:  slwrk-067\n", patterns, rc=1).suspect_hosts == ()
    prrte = "PRTE has lost communication with a remote daemon.\n  Remote daemon: [prterun-master-0-34@0,1] on node worker7\n"
    v = verdict(prrte, patterns, rc=1)
    assert v.blamed_hosts == () and names(v.suspect_hosts) == ["worker7"]


def test_open_mpi_5_wrapped_notice(patterns: PatternSet) -> None:
    """Open MPI 5 wraps 'noticed ... exited on' / 'signal 9 (Killed).' over two lines; the host is still named."""
    text = "prterun noticed that process rank 2 with PID 99 on node cpu155 exited on\nsignal 9 (Killed).\n"
    v = verdict(text, patterns, rc=137)
    assert v.failure_class is FailureClass.RANK_KILLED and names(v.blamed_hosts) == ["cpu155"]
    segv = "prterun noticed that process rank 2 with PID 99 on node cpu155 exited on\nsignal 11 (Segmentation fault).\n"
    crashed = verdict(segv, patterns, rc=139)  # where it started, but no node fault: nobody excluded
    assert names(crashed.blamed_hosts) == ["cpu155"] and crashed.exclude_hosts == ()


def test_hydra_bad_termination_needs_the_running_at_line_just_above(patterns: PatternSet) -> None:
    """'EXIT CODE: 9' takes its host from the 'RUNNING AT' line above it, and only from there."""
    near = "=   PID 897 RUNNING AT n2\n=   EXIT CODE: 9\n"
    assert names(verdict(near, patterns, rc=9).blamed_hosts) == ["n2"]
    far = "=   PID 897 RUNNING AT n2\n" + "noise\n" * 10 + "=   EXIT CODE: 9\n"
    assert verdict(far, patterns, rc=9).blamed_hosts == ()


@pytest.mark.parametrize("text", ["", "[17:29:55][I] iter=42 epoch=0\n", "loading data\nstarting training\n"])
def test_no_exit_status_and_no_evidence_is_unknown_never_success(patterns: PatternSet, text: str) -> None:
    """Issue 11, no verdict without evidence: a log cut short (or a job killed before it could say why) with no exit
    status is unknown, not success; it blames nobody and swaps nobody. Exit 0 or the scheduler's COMPLETED is
    success."""
    v = verdict(text, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and "no exit status" in v.reason
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert verdict(text, patterns, rc=0).failure_class is FailureClass.SUCCESS
    done = classify(scan(text.encode(), patterns), facts=SchedulerFacts(job_state="COMPLETED"))
    assert done.failure_class is FailureClass.SUCCESS


def test_kills_after_another_rank_crashed_are_its_teardown(patterns: PatternSet) -> None:
    """A rank segfaults on n2; srun (--kill-on-bad-exit) then SIGKILLs the rest: n2 started it, nobody is excluded."""
    log = "srun: error: n2: task 3: Segmentation fault (core dumped)\nsrun: error: n1: tasks 0-1: Killed\n"
    v = verdict(log, patterns, rc=137, allocation=[Host(f"n{i}") for i in range(1, 4)])
    assert v.failure_class is FailureClass.RANK_KILLED and v.crash
    assert v.blamed_hosts == (Host("n2"),) and v.exclude_hosts == ()
    assert "Segmentation fault" in v.signature  # the crash, not the teardown's kill


def test_oom_explains_a_shell_killed_line_printed_before_it(patterns: PatternSet) -> None:
    """bash reports the SIGKILLed command before slurmstepd reports the OOM kill: the OOM decides (rule 2);
    alone, the shell's 'Killed' is a rank killed on a node the line does not name."""
    killed = "/var/spool/slurmd/job42/slurm_script: line 9:  4727 Killed                  python train.py\n"
    v = verdict(killed + "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.batch cgroup.\n", patterns)
    assert v.failure_class is FailureClass.OOM
    alone = verdict(killed, patterns)
    assert alone.failure_class is FailureClass.RANK_KILLED
    assert not alone.blamed_hosts and not alone.exclude_hosts


def test_a_task_failing_after_srun_terminates_the_step_is_not_an_origin(patterns: PatternSet) -> None:
    """habitat-lab#298: srun tears the step down after the first segfault; the next one is that teardown."""
    v = verdict(
        "srun: error: nid04277: task 1: Segmentation fault (core dumped)\n"
        "srun: Terminating job step 20370799.1\n"
        "srun: error: nid04276: task 0: Segmentation fault (core dumped)\n",
        patterns,
    )
    assert names(v.blamed_hosts) == ["nid04277"]
    assert not v.exclude_hosts


def test_segfaults_after_a_first_failure_are_its_cascade(patterns: PatternSet) -> None:
    """Aurora job 8466848 (the seed): one rank's std::bad_alloc, then thousands of 'rank N died from signal 11':
    the OOM decides, and the signal-11 hosts are victims, never origins."""
    log = ("[rank5141]: MemoryError: std::bad_alloc\n"
           "x4102c5s3b0n0.hsn.cm.aurora.alcf.anl.gov: rank 1304 died from signal 11\n"
           "rank 2413 died from signal 11\nrank 88 died from signal 15\n")
    v = verdict(log, patterns, rc=143)
    assert v.failure_class is FailureClass.OOM and v.blamed_hosts == () and not v.crash


def test_a_lone_pals_segfault_then_teardown_names_its_host(patterns: PatternSet) -> None:
    """PALS: 'rank N died from signal 11' first, then the SIGTERM teardown of the rest: the segfaulted rank's host
    is the origin (rank_killed, a crash: blamed, not excluded); the SIGTERMed hosts are innocent."""
    log = (f"x4502c1s3b0n0.{AURORA}: rank 12 died from signal 11\n"
           f"x4610c4s5b0n0.{AURORA}: rank 0 died from signal 15\n"
           f"x4610c4s5b0n0.{AURORA}: rank 1 died from signal 15\n")
    v = verdict(log, patterns, rc=139)
    assert v.failure_class is FailureClass.RANK_KILLED and v.crash
    assert v.blamed_hosts == (Host("x4502c1s3b0n0"),) and v.exclude_hosts == () and not v.node_fault


def test_every_rank_sigtermed_by_a_time_limit_names_nobody(patterns: PatternSet) -> None:
    """A time limit SIGTERMs every rank at once: walltime, nobody is the origin."""
    log = ("slurmstepd: error: *** STEP 88.0 ON n1 CANCELLED AT 2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n"
           + "".join(f"srun: error: n{i}: task {i}: Terminated\n" for i in range(1, 5)))
    v = verdict(log, patterns, rc=143, allocation=[Host(f"n{i}") for i in range(1, 5)])
    assert v.failure_class is FailureClass.WALLTIME and v.blamed_hosts == ()
    pals = "".join(f"x10{i}c0s0b0n0.{AURORA}: rank {i} died from signal 15\n" for i in range(4))
    assert verdict(pals, patterns, rc=143).blamed_hosts == ()


def test_every_host_crashing_alike_names_nobody(patterns: PatternSet) -> None:
    """The same segfault on every host at once (a bug every rank hits): a crash, but no origin to name."""
    log = "".join(f"srun: error: n{i}: task {i}: Segmentation fault (core dumped)\n" for i in range(1, 4))
    v = verdict(log, patterns, rc=139, allocation=[Host(f"n{i}") for i in range(1, 4)])
    assert v.failure_class is FailureClass.RANK_KILLED and v.blamed_hosts == () and v.exclude_hosts == ()


def test_srun_reporting_both_nodes_tasks_crashed_names_nobody(patterns: PatternSet) -> None:
    """srun says every task of both nodes died of a Bus error, none of its teardown's SIGTERM: a job-wide crash
    (heldout507), where a 'Terminated' node would have been the first crash's victim."""
    log = ("srun: error: c1: tasks 29,31: Bus error\n"
           "srun: error: c2: tasks 38,40,42-44: Bus error\n"
           "srun: error: c1: tasks 0,4,15,25: Bus error (core dumped)\n")
    v = verdict(log, patterns, rc=135)
    assert v.failure_class is FailureClass.RANK_KILLED and v.blamed_hosts == () and v.exclude_hosts == ()
    torn = verdict("srun: error: c1: task 3: Segmentation fault (core dumped)\n"
                   "srun: error: c2: tasks 4-7: Segmentation fault\n"
                   "srun: error: c2: tasks 8-9: Terminated\n", patterns, rc=139)
    assert names(torn.blamed_hosts) == ["c1"]


@pytest.mark.parametrize("last", [
    "IndexError: list index out of range",
    "KeyError: 'input_ids'",
    "TypeError: forward() got an unexpected keyword argument 'labels'",
    "ValueError: too many values to unpack (expected 2)",
    "AttributeError: 'NoneType' object has no attribute 'shape'",
    "NameError: name 'modle' is not defined",
    "AssertionError: batch size must divide the world size",
    "ZeroDivisionError: division by zero",
    "NotImplementedError",
    "RecursionError: maximum recursion depth exceeded",
    "FileNotFoundError: [Errno 2] No such file or directory: '/data/train.bin'",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
])
def test_a_programming_error_after_progress_is_a_user_error(patterns: PatternSet, last: str) -> None:
    """A traceback after progress lines, ending in a programming or input error, then a launcher's banner:
    user_error, not retryable, nobody blamed (issue 20, item 2)."""
    log = ("[rank3]: step=10 loss=2.31\n[rank3]: step=11 loss=2.30\n[rank3]: Traceback (most recent call last):\n"
           '[rank3]:   File "/lus/x/train.py", line 88, in <module>\n'
           f"[rank3]: {last}\n"
           "--------------------------------------------------------------------------\n"
           "Primary job  terminated normally, but 1 process returned\n"
           "a non-zero exit code. Per user-direction, the job has been aborted.\n"
           "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
           "the job to be terminated. The first process to do so was:\n")
    v = verdict(log, patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and v.blamed_hosts == ()


def test_the_same_traceback_on_64_ranks_is_one_user_error(patterns: PatternSet) -> None:
    """Every rank raises the same KeyError (the data has no such column): one user error, nobody blamed."""
    log = "".join(f"[rank{r}]: Traceback (most recent call last):\n[rank{r}]: KeyError: 'label'\n" for r in range(64))
    log += "".join(f"x40{r:02d}c0s0b0n0.{AURORA}: rank {r} exited with code 1\n" for r in range(64))
    v = verdict(log, patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and v.blamed_hosts == () and v.exclude_hosts == ()


@pytest.mark.parametrize(("infra", "fclass"), [
    ("OSError: [Errno 28] No space left on device\n", FailureClass.TRANSIENT_IO),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.0 cgroup.\n", FailureClass.OOM),
    ("srun: error: Node failure on n2\n", FailureClass.NODE_LOSS),
])
def test_infrastructure_explains_a_programming_error(patterns: PatternSet, infra: str, fclass: FailureClass) -> None:
    """A KeyError with a full file system, an OOM kill or a dead node in the same log: the infrastructure's class
    wins, before or after the error's line."""
    for log in (infra + "KeyError: 'step'\n", "KeyError: 'step'\n" + infra):
        v = verdict(log, patterns, rc=1, allocation=[Host("n1"), Host("n2")])
        assert v.failure_class is fclass, log


def test_network_trouble_after_a_programming_error_is_the_peers_view(patterns: PatternSet) -> None:
    """Rank 3 raises ValueError and leaves; the others then see their peer gone: still the user's error."""
    log = ("[rank3]: ValueError: bad shape\n"
           "[rank0]: RuntimeError: NCCL communicator was aborted on rank 0.\n"
           "[rank1]: torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error\n")
    assert verdict(log, patterns, rc=1).failure_class is FailureClass.USER_ERROR


@pytest.mark.parametrize("line", [
    "train.py: error: unrecognized arguments: --lr-warmup 100",
    "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD",
    "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0",
])
def test_argparse_and_the_users_own_mpi_abort_are_user_errors(patterns: PatternSet, line: str) -> None:
    assert verdict(line + "\n", patterns, rc=1).failure_class is FailureClass.USER_ERROR


def test_a_launcher_banner_alone_is_unknown(patterns: PatternSet) -> None:
    """'a process exited non-zero' with exit 1 and no exception: the program failed by itself, cause not shown."""
    log = ("Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, "
           "the job has been aborted.\nx1: rank 3 exited with code 1\n")
    v = verdict(log, patterns, rc=1)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == () and not v.node_fault


@pytest.mark.parametrize("banner", [
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n",
    "3 total processes killed (some possibly by mpirun during cleanup)\n",
])
def test_an_open_mpi_teardown_banner_alone_is_not_left_to_the_words(patterns: PatternSet, banner: str) -> None:
    """A pasted ABINIT log with no exit status that ends in mpirun's teardown banner alone (abinitattach_heldout680):
    the run failed of a cause not shown, unknown; the SCF lines' words ('hartree', 'ngfft') read like the crashes
    the corpus saw in that code and must not decide."""
    log = (" getcut: wavevector=  0.0000  0.0000  0.0000  ngfft=  27  27 100\n"
           "         ecut(hartree)=     18.375   => boxcut(ratio)=   2.03656\n"
           " ITER STEP NUMBER     1\n"
           " vtorho : nnsclo_now=  2, note that nnsclo,dbl_nnsclo,istep=  0 0  1\n"
           "--------------------------------------------------------\n" + banner)
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == () and "words" not in v.reason


@pytest.mark.parametrize("step", [
    "  PML add procs failed\n  --> Returned \"Not found\" (-13) instead of \"Success\" (0)\n",
    "  ompi_mpi_init: ompi_rte_init failed\n  --> Returned \"(null)\" (-43) instead of \"Success\" (0)\n",
])
def test_open_mpis_mpi_init_failed_banner_alone_is_not_left_to_the_words(patterns: PatternSet, step: str) -> None:
    """`from mpi4py import MPI` at a Python prompt, then Open MPI's 'It looks like MPI_INIT failed for some reason'
    banner and the step that failed, no exit status (mpi4py2_heldout689, tmpi#17): MPI_Init failed of a cause not
    shown, unknown; the help text's words and the prompt's ('import', 'copyright', 'open') read like a user's error
    and must not decide."""
    log = ('Python 3.11.5 (main, Sep 11 2023, 08:31:25) [Clang 14.0.6 ] on darwin\n'
           'Type "help", "copyright", "credits" or "license" for more information.\n'
           ">>> from mpi4py import MPI\n"
           "--------------------------------------------------------------------------\n"
           "It looks like MPI_INIT failed for some reason; your parallel process is\n"
           "likely to abort.  There are many reasons that a parallel process can\n"
           "fail during MPI_INIT; some of which are due to configuration or environment\n"
           "problems.  This failure appears to be an internal failure; here's some\n"
           "additional information (which may only be relevant to an Open MPI\n"
           "developer):\n\n" + step +
           "--------------------------------------------------------------------------\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == () and "words" not in v.reason


def test_macos_mallocs_own_allocation_failure_decides_over_the_segfault_after_it(patterns: PatternSet) -> None:
    """macOS's malloc could not map a region and returned NULL; the program then died of SIGSEGV on it: the
    process's own report that it ran out of memory is the cause, oom (abinitattach_heldout680)."""
    log = ("abinit(20433) malloc: *** mmap(size=18446744072846893056) failed (error code=12)\n"
           "*** error: can't allocate region\n"
           "*** set a breakpoint in malloc_error_break to debug\n\n"
           "Program received signal SIGSEGV: Segmentation fault - invalid memory reference.\n\n"
           "Backtrace for this error:\n#0  0x10590524c\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.OOM and not v.retryable and v.blamed_hosts == ()


@pytest.mark.parametrize("log", [
    "A worker died or was killed while executing a task by an unexpected system error. Worker IP address: "
    "10.1.2.3 Worker port: 43725 Worker PID: 254000 Worker exit type: SYSTEM_ERROR\n",
    "parsl.executors.high_throughput.errors.WorkerLost: Task failure due to loss of worker 0 on host c3n07\n",
])
def test_a_failure_of_unknown_cause_names_its_host_as_a_suspect_never_blamed(patterns: PatternSet, log: str) -> None:
    """A worker that died with no cause shown: unknown, and its host a lead for the supervisor to probe (with a
    control), not blame: the README gives an unknown failure no origin, and the host may well be innocent."""
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == () and not v.node_fault
    assert [h.name for h in v.suspect_hosts] == [("10.1.2.3" if "Ray" in log or "Worker IP" in log else "c3n07")]
    assert "a suspect, not blamed" in v.reason


@pytest.mark.parametrize("log, fclass, blamed", [
    ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
     "IndexError: list index out of range\nsrun: error: c3n07: task 0: Exited with exit code 1\n",
     FailureClass.USER_ERROR, []),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=4821.0. Some of the step tasks have been OOM Killed.\n"
     "srun: error: c3n07: task 2: Out Of Memory\n", FailureClass.OOM, ["c3n07"]),
    ("x1001c0s2b0n0: rank 5 died from signal 11 and dumped core\n"
     "x1001c0s3b0n0: rank 9 died from signal 15\n", FailureClass.RANK_KILLED, ["x1001c0s2b0n0"]),
])
def test_a_paste_with_a_line_number_gutter_reads_as_printed(
        patterns: PatternSet, log: str, fclass: FailureClass, blamed: list[str]) -> None:
    """A log pasted from a viewer that numbers its lines ('  12  srun: error: ...'), also a quoted reply's lines so
    numbered ('  12  > srun: ...'): the same verdict as the log."""
    gutter = "".join(f"{n:4d}  {line}\n" for n, line in enumerate(log.splitlines(), start=120))
    quoted = "".join(f"{n:4d}  > {line}\n" for n, line in enumerate(log.splitlines(), start=120))
    for text in (log, gutter, quoted):
        v = verdict(text, patterns)
        assert (v.failure_class, names(v.blamed_hosts)) == (fclass, blamed), text


@pytest.mark.parametrize("depth", [1, 4, 8, 10])
def test_a_report_quoted_many_replies_deep_reads_as_printed(patterns: PatternSet, depth: int) -> None:
    """A long mail thread quotes the whole chain in every reply, so the Open MPI users' list archive keeps a run's
    output eight or ten '>' deep (heldout679): its lines read as the bare log. Here orte_init's help names the
    framework whose select failed (the installation), which decides over the launcher's daemon report below it."""
    log = ("[linux-z0je:08804] [NO-NAME] ORTE_ERROR_LOG: Not found in file runtime/orte_init_stage1.c at line 182\n"
           "orte_rml_base_select failed\n"
           "--> Returned value -13 instead of ORTE_SUCCESS\n"
           "[linux-tmpw:10489] ERROR: A daemon on node n02 failed to start as expected.\n"
           "[linux-tmpw:10489] ERROR: The daemon exited unexpectedly with status 243.\n")
    quoted = "".join(">" * depth + " " + line + "\n" for line in log.splitlines())
    for text in (log, quoted):
        v = verdict(text, patterns)
        assert v.failure_class is FailureClass.USER_ERROR and not v.blamed_hosts, text


def test_a_logic_error_quoting_a_device_fault_is_a_crash(patterns: PatternSet) -> None:
    """An uncaught std::logic_error is the program's own error, unless its message quotes a GPU kernel's fault (a
    check that only noticed the device's illegal address): then the crash decides."""
    head = "terminate called after throwing an instance of 'std::logic_error'\n  what():  dynamics.cpp:486: FAIL:\n"
    own = verdict(head + "Program received signal SIGABRT: Process abort signal.\n", patterns)
    fault = verdict(head + "cudaDeviceSynchronize() error( cudaErrorIllegalAddress): an illegal memory access was "
                    "encountered Kokkos_Cuda_Instance.cpp:151\nProgram received signal SIGABRT: Process abort signal.\n",
                    patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable
    assert fault.failure_class is FailureClass.RANK_KILLED and fault.retryable


def test_an_oom_below_the_shells_killed_line_is_placed_where_the_job_ran(patterns: PatternSet) -> None:
    """The job script's 'Killed' (the OOM killer's SIGKILL) comes first, LSF's TERM_MEMLIMIT report after it: the
    out-of-memory is still placed on the one host the report says the job ran on (not a node fault)."""
    log = ("/home/u/.lsbatch/1588194035.6410309.shell: line 12: 20069 Killed    python main.py\n"
           "Job was executed on host(s) <n-62-23-28>, in queue <hpc>, as user <u> in cluster <dcc>\n"
           "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\nExited with exit code 137.\n")
    v = verdict(log, patterns, rc=137)
    assert v.failure_class is FailureClass.OOM and names(v.blamed_hosts) == ["n-62-23-28"]
    assert not v.node_fault and v.exclude_hosts == ()


@pytest.mark.parametrize("log, fclass, blamed", [
    ("/opt/sge/default/spool/node04/job_scripts/505084: line 40: 31368 Illegal instruction     (core dumped)\n",
     FailureClass.RANK_KILLED, ["node04"]),
    ("Reading in tax DB...terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
     "/opt/gridengine/default/spool/cngb-compute-m17-2/job_scripts/279579: line 6: 58994 Aborted.\n",
     FailureClass.OOM, ["cngb-compute-m17-2"]),
    ("[0]PETSC ERROR: Out of memory. This could be due to allocating\n[0]PETSC ERROR: Memory requested 184467\n"
     "[0]PETSC ERROR: ./ex1 on a arch-linux-c-debug named n001 by alice Mon Jan  1 00:00:00 2024\n",
     FailureClass.OOM, ["n001"]),
    ("[0]PETSC ERROR: Argument out of range\n"
     "[0]PETSC ERROR: ./ex1 on a arch-linux-c-debug named n001 by alice Mon Jan  1 00:00:00 2024\n",
     FailureClass.USER_ERROR, []),
    ("/home/alice/run/job_scripts/42: line 3: 7 Segmentation fault\n", FailureClass.RANK_KILLED, []),
], ids=["sge-spool-crash", "sge-spool-oom", "petsc-oom", "petsc-usage", "no-spool"])
def test_where_the_job_ran_places_a_hostless_crash_or_oom(patterns: PatternSet, log: str, fclass: FailureClass,
                                                          blamed: list[str]) -> None:
    """Grid Engine's spool path of the job script (<spool>/<host>/job_scripts/<id>) and PETSc's report header
    ('... named <host> by ...') say where the job ran: a crash or an out-of-memory that names no host is placed
    there (not a node fault); a usage error blames nobody, and a path outside a spool names no host."""
    v = verdict(log, patterns)
    assert v.failure_class is fclass and names(v.blamed_hosts) == blamed, v.reason
    assert not v.node_fault and v.exclude_hosts == ()


def test_another_ranks_petsc_header_does_not_place_an_out_of_memory(patterns: PatternSet) -> None:
    """PETSc prefixes each rank's report with its rank ('[0]PETSC ERROR: ', '[1]PETSC ERROR: '), and a report's header
    names the host of the rank that printed it. Rank 0's out-of-memory is not placed on the host rank 1's report
    names (heldout222: underworld2's rank 0 out of memory, rank 1 reporting inconsistent data); rank 0's own header
    still places it."""
    oom = ("[0]PETSC ERROR: Out of memory. This could be due to allocating\n"
           "[1]PETSC ERROR: Petsc has generated inconsistent data\n"
           "[1]PETSC ERROR: solver.py on a x86_64-linux-gnu-real named node7 by u Mon Apr 16 14:58:13 2018\n")
    v = verdict(oom, patterns)
    assert v.failure_class is FailureClass.OOM and v.blamed_hosts == (), v.reason
    own = oom + "[0]PETSC ERROR: solver.py on a x86_64-linux-gnu-real named node3 by u Mon Apr 16 14:58:13 2018\n"
    v = verdict(own, patterns)
    assert v.failure_class is FailureClass.OOM and names(v.blamed_hosts) == ["node3"], v.reason
    assert not v.node_fault and v.exclude_hosts == ()


def test_amrex_signal_handler_abort_is_the_crash_not_the_programs_stop(patterns: PatternSet) -> None:
    """AMReX's signal handler prints the signal it caught ('Erroneous arithmetic operation' for SIGFPE), then aborts
    with the signal's number: MPICH's 'application called MPI_Abort(..., 8)' after it is that crash, not the
    program's own MPI_Abort (heldout222: amr-wind under its FPE traps)."""
    log = ("Erroneous arithmetic operation\nSee Backtrace.0 file for details\n"
           "Abort(8) on node 0 (rank 0 in comm 496): application called MPI_Abort(comm=0x84000002, 8) - process 0\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and not v.node_fault, v.reason


def test_amrex_sigabrt_after_its_own_abort_is_the_stop_alone_a_crash(patterns: PatternSet) -> None:
    """AMReX's handler prints 'SIGABRT' for the abort amrex::Abort raises itself: after an 'amrex::Abort::N::' line it
    is the program's stop, not a crash that came first (heldout229: WarpX's 'no ROCm-capable device', then MPICH's
    MPI_Abort); alone, after the HSA runtime's memory access fault, it is the rank's crash (heldout229: Castro)."""
    stop = ("amrex::Abort::0::HIP error in file AMReX_GpuDevice.cpp line 256 no ROCm-capable device is detected !!!\n"
            "    SIGABRT\n    See Backtrace.0 file for details\n"
            "    MPICH ERROR [Rank 0] [job id] - Abort(6) (rank 0 in comm 480): application called "
            "MPI_Abort(comm=0x84000001, 6) - process 0\n")
    v = verdict(stop, patterns)
    assert v.failure_class is not FailureClass.RANK_KILLED and not v.node_fault, v.reason
    fault = ("Memory access fault by GPU node-10 (Agent handle: 0x68af1d0) on address 0x1334000. Reason: Unknown.\n"
             "SIGABRT\n")
    v = verdict(fault, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and not v.node_fault, v.reason


def test_julia_1_11_signal_report_is_a_crash(patterns: PatternSet) -> None:
    """Julia 1.11 reports a fatal signal as '[pid] signal 6 (-6): Aborted' (the si_code in parentheses), older
    releases as 'signal (6): Aborted': both are the process's crash (heldout222: MUMPS.jl's abort in free)."""
    log = ("[321785] signal 6 (-6): Aborted\n"
           "in expression starting at /home/u/mumps_test.jl:33\n"
           "free at /lib/x86_64-linux-gnu/libc.so.6 (unknown line)\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and not v.node_fault, v.reason


def test_a_node_prefix_after_a_loggers_timestamp_names_the_host(patterns: PatternSet) -> None:
    """bcbio-nextgen logs what each node runs as '[2021-03-04T23:32Z] ica3: ...': the host is read behind the
    timestamp as behind pdsh's bare 'ica3: ' prefix; a word that is no node's name (no digit) still names nobody."""
    kill = "/usr/bin/bash: line 1: 50859 Killed                  /opt/bin/freebayes -f ref.fa\n"
    v = verdict("[2021-03-04T20:42Z] ica2: Genotyping with FreeBayes\n[2021-03-04T23:32Z] ica3: " + kill, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and names(v.blamed_hosts) == ["ica3"], v.reason
    v = verdict("[2021-03-04T23:32Z] freebayes: " + kill, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and v.blamed_hosts == (), v.reason


def test_an_exception_raised_inside_a_signal_handler_is_the_signals(patterns: PatternSet) -> None:
    """DeepSpeed's runner raises NameError in its sigkill_handler when a Ctrl-C arrives: the interrupt decides
    (cancelled, not retried); the same NameError raised in the program's own code is its mistake."""
    def log(frame: str) -> str:
        return ("Traceback (most recent call last):\n"
                f'  File "/venv/lib/python3.10/site-packages/deepspeed/launcher/runner.py", line 548, in {frame}\n'
                "    result_kill = subprocess.Popen(kill_cmd, env=env)\n"
                "NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope\n"
                "    time.sleep(1e-3)\nKeyboardInterrupt\n")
    assert verdict(log("sigkill_handler"), patterns).failure_class is FailureClass.CANCELLED
    assert verdict(log("main"), patterns).failure_class is FailureClass.USER_ERROR


def test_a_spawn_childs_truncated_pipe_is_its_parents_end_not_a_mistake(patterns: PatternSet) -> None:
    """A spawned child that could not unpickle what its parent sent ('self = reduction.pickle.load(from_parent)',
    then 'pickle data was truncated') lost its parent: the SIGKILL of a worker above it decides (heldout722). The
    same UnpicklingError from the program's own pickle.load of a saved state is a truncated file."""
    kill = "Exception: process 0 terminated with signal SIGKILL\n"
    child = ("Traceback (most recent call last):\n"
             '  File "/usr/lib/python3.8/multiprocessing/spawn.py", line 126, in _main\n'
             "    self = reduction.pickle.load(from_parent)\n"
             "_pickle.UnpicklingError: pickle data was truncated\n")
    v = verdict(kill + child, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED and v.retryable, v.reason
    own = verdict(kill + child.replace("self = reduction.pickle.load(from_parent)", "state = load_state(fh)"), patterns)
    assert own.failure_class is FailureClass.USER_ERROR, own.reason


def test_a_kill_status_says_more_than_a_wrappers_fatal_words(patterns: PatternSet) -> None:
    """A workflow wrapper logs 'FATAL ERROR: Error occurred during execution of mpiexec ...' before the traceback that
    quotes the child's exit status 137: the SIGKILL says how the step ended (retryable), the fatal words only that it
    did. Without a kill status the same words are the program's own stop, and a crash before them still decides."""
    fatal = "upp : FATAL ERROR: Error occurred during execution of mpiexec -n 120 /work/upp.x\n"
    killed = verdict(fatal + "wxflow.executable.ProcessError: Command exited with status 137:\n", patterns)
    assert killed.failure_class is FailureClass.RANK_KILLED and killed.retryable
    own = verdict(fatal + "wxflow.executable.ProcessError: Command exited with status 1:\n", patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable


def test_a_workflow_that_says_every_step_is_done_succeeded_unless_a_line_says_otherwise(patterns: PatternSet) -> None:
    """Snakemake's 'N of N steps (100%) done' is its success; a time limit on the job that printed it decides first,
    and a share below 100% is progress, not success."""
    done = "Finished job 0.\n6 of 6 steps (100%) done\nComplete log: .snakemake/log/x.snakemake.log\n"
    assert verdict(done, patterns).failure_class is FailureClass.SUCCESS
    late = verdict(done + "slurmstepd: error: *** JOB 4242 ON exp-1-15 CANCELLED AT 2022-01-10T08:50:05 DUE TO TIME "
                   "LIMIT ***\n", patterns)
    assert late.failure_class is FailureClass.WALLTIME
    assert verdict("Finished job 3.\n5 of 6 steps (83%) done\n", patterns).failure_class is FailureClass.UNKNOWN


def test_nextflows_run_summary_succeeded_unless_it_counts_a_failed_task(patterns: PatternSet) -> None:
    """Nextflow's end-of-run summary always prints 'Succeeded   : N'; 'Failed      : N' below it (printed only when
    not zero) decides before it, and a line that says why a task failed decides before both (heldout95)."""
    summary = "Completed at: 31-Jan-2025 15:39:38\nDuration    : 1m 41s\nCPU hours   : 0.1\nSucceeded   : 9\n"
    assert verdict(summary, patterns).failure_class is FailureClass.SUCCESS
    failed = verdict(summary + "Failed      : 1\n", patterns)
    assert failed.failure_class is FailureClass.UNKNOWN and failed.retryable
    timed = verdict("  Process exceeded running time limit (1h)\n" + summary + "Failed      : 1\n", patterns)
    assert timed.failure_class is FailureClass.WALLTIME


def test_a_crash_or_oom_without_a_host_is_tied_to_where_the_launcher_says_that_rank_ended(patterns: PatternSet) -> None:
    """srun -l's '581: ' prefix on a crash that names no host and srun's own line for task 581 ('frontier04993: task
    581: Aborted'), even after the teardown of other tasks began, tie the crash to that host; a task's number that
    does not match ties nothing. A hostless OOM on a one-host job is placed where srun says a task of it exited."""
    crash = (" 581: Program received signal SIGABRT: Process abort signal.\n"
             "srun: error: frontier00581: tasks 56-63: Terminated\n"
             "srun: error: frontier04993: task {n}: Aborted (core dumped)\n")
    tied = verdict(crash.format(n=581), patterns)
    assert tied.failure_class is FailureClass.RANK_KILLED and names(tied.blamed_hosts) == ["frontier04993"]
    assert not tied.node_fault
    other = verdict(crash.format(n=580), patterns)
    assert other.failure_class is FailureClass.RANK_KILLED and "frontier04993" not in names(other.blamed_hosts)
    oom = verdict("GPUassert: hipErrorOutOfMemory src/neighbor_lists_gpu.cu 336\n"
                  "srun: error: nid006914: task 3: Exited with exit code 1\n"
                  "srun: error: nid006914: tasks 0-2,4-5: Terminated\n", patterns)
    assert oom.failure_class is FailureClass.OOM and names(oom.blamed_hosts) == ["nid006914"] and not oom.exclude_hosts
    two = verdict("GPUassert: hipErrorOutOfMemory src/neighbor_lists_gpu.cu 336\n"
                  "srun: error: nid006914: task 3: Exited with exit code 1\n"
                  "srun: error: nid006915: tasks 4-5: Terminated\n", patterns)
    assert two.failure_class is FailureClass.OOM and two.blamed_hosts == ()


@pytest.mark.parametrize("line, fclass", [
    ("/var/spool/slurmd/job8489926/slurm_script: illegal option -- G", FailureClass.USER_ERROR),
    ("ERROR: cannot read /scratch/network_model/node_weights.bin: bad magic number", FailureClass.USER_ERROR),
    ("ERROR: cannot read weights: network file system not responding", FailureClass.UNKNOWN),
    ("Error: cannot write /sys/fs/cgroup/memory/job42/memory.limit_in_bytes: invalid argument", FailureClass.UNKNOWN),
])
def test_words_in_a_path_do_not_make_an_error_line_the_infrastructures(
        patterns: PatternSet, line: str, fclass: FailureClass) -> None:
    """The last resort passes over an error line that speaks of the infrastructure, but a file path's words
    ('slurmd', 'network', 'node' in where a script or an input lives) do not speak of it."""
    assert verdict(line + "\n", patterns, rc=1).failure_class is fclass


def test_signatures_mask_what_changes_between_runs(patterns: PatternSet) -> None:
    """Two runs of one bug: other ranks, hosts, addresses, paths; one signature. Another bug: another one."""
    one = verdict('[rank3]: Traceback (most recent call last):\n[rank3]: KeyError: \'label\' at 0x7f3a2c\n'
                  "x1: rank 3 exited with code 1\n", patterns, rc=1, allocation=[Host("x1"), Host("x2")])
    two = verdict('[rank7]: Traceback (most recent call last):\n[rank7]: KeyError: \'label\' at 0x55aa10\n'
                  "x2: rank 7 exited with code 1\n", patterns, rc=1, allocation=[Host("x1"), Host("x2")])
    other = verdict("[rank3]: KeyError: 'input'\n", patterns, rc=1)
    assert one.signature == two.signature != other.signature
    assert "x1" not in one.signature and "0x" not in one.signature


def test_a_signature_masks_the_allocations_hosts_at_scale(patterns: PatternSet) -> None:
    """With a 10,000-host allocation the host named in the line is masked, and only it is looked for."""
    allocation = [Host(f"x{i:05d}c0s0b0n0") for i in range(10_000)]
    v = verdict("x00042c0s0b0n0: rank 3 died from signal 6\n", patterns, rc=134, allocation=allocation)
    assert "<host>" in v.signature and "x00042" not in v.signature


def test_an_exception_a_library_logged_as_a_warning_ends_nothing(patterns: PatternSet) -> None:
    """A traceback a library caught and logged at WARNING level (torch._dynamo, Ray's worker) is not the program
    dying: the scheduler's time limit after it decides."""
    log = ("[2023-11-29 11:05:15,440] torch._dynamo.convert_frame: [WARNING] FileNotFoundError: [Errno 2] No such "
           "file or directory: 'ldconfig'\n"
           "TERM_RUNLIMIT: job killed after reaching LSF run time limit.\n")
    assert verdict(log, patterns).failure_class is FailureClass.WALLTIME
    raised = "FileNotFoundError: [Errno 2] No such file or directory: 'input.csv'\n"
    assert verdict(raised, patterns).failure_class is FailureClass.USER_ERROR


def test_an_abort_right_after_a_hostless_oom_names_where_it_ran(patterns: PatternSet) -> None:
    """A process out of device memory throws, and the C++ runtime aborts it: the SIGABRT line after the OOM is that
    process, so its host is where the failure started (blamed, not excluded). A SIGSEGV after an OOM is a peer's
    cascade (the seed), and names nobody."""
    log = ("terminate called after throwing an instance of 'thrust::system::detail::bad_alloc'\n"
           "  what():  std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n"
           f"x3006c0s19b1n0.{AURORA}: rank 0 died from signal 6 and dumped core\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.OOM
    assert v.blamed_hosts == (Host("x3006c0s19b1n0"),) and v.exclude_hosts == ()
    segv = log.replace("signal 6 and dumped core", "signal 11")
    assert verdict(segv, patterns).blamed_hosts == ()


def test_the_crash_handler_right_after_a_terminate_is_its_abort(patterns: PatternSet) -> None:
    """libstdc++'s terminate handler reports the uncaught std::bad_alloc, then abort()s that process: Open MPI's crash
    handler's first line right after the report ('[host:pid] *** Process received signal ***', its 'Signal: Aborted
    (6)' below) is that abort, and names where the process ran out of memory (heldout228). The same handler line
    further down, after other output, may be a peer's crash and names nobody."""
    log = ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
           "[hpb0205:09049] *** Process received signal ***\n[hpb0205:09049] Signal: Aborted (6)\n"
           "[hpb0205:09049] Signal code:  (-6)\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.OOM
    assert v.blamed_hosts == (Host("hpb0205"),) and v.exclude_hosts == ()
    later = log.replace("[hpb0205:09049] *** Process", "reading shard 7 of 12\n[hpb0205:09049] *** Process", 1)
    assert verdict(later, patterns).blamed_hosts == ()


def test_a_crash_exit_status_from_any_launcher_is_a_crash(patterns: PatternSet) -> None:
    """128 + a crash signal (139 SIGSEGV, 134 SIGABRT, 135 SIGBUS ...) in a launcher's 'exited with code' line is a
    rank's crash whatever the launcher; 128 + SIGUSR2 (LSF's warning before a kill) is not."""
    for line in ("flux-job: task(s) exited with exit code 139\n", "TACC: MPI job exited with code: 134\n"):
        v = verdict(line, patterns)
        assert v.failure_class is FailureClass.RANK_KILLED and v.crash, line
    assert verdict("Exited with exit code 140.\n", patterns).failure_class is FailureClass.UNKNOWN


def test_srun_kills_after_a_task_exited_non_zero_are_the_teardown(patterns: PatternSet) -> None:
    """srun --kill-on-bad-exit: a task exits 1 of its own, srun SIGKILLs the others, and under load its lines come
    before the program's relayed traceback: the kill is the teardown and the program's error decides. A task
    SIGKILLed before any exit is still the origin."""
    hosts = [Host("n1"), Host("n2"), Host("n3")]
    tb = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'hotspare_no_such_module'\n"
    log = "srun: error: n1: task 0: Exited with exit code 1\nsrun: error: n2: task 1: Killed\n" + tb
    v = verdict(log, patterns, rc=1, allocation=hosts)
    assert v.failure_class is FailureClass.USER_ERROR and v.blamed_hosts == ()
    first = verdict("srun: error: n2: task 1: Killed\nsrun: error: n1: task 0: Exited with exit code 1\n", patterns,
                    rc=1, allocation=hosts)
    assert first.failure_class is FailureClass.RANK_KILLED and first.blamed_hosts == (Host("n2"),)


def test_srun_kills_after_its_own_abort_are_that_abort_not_a_rank_of_its_own(patterns: PatternSet) -> None:
    """srun prints 'Job step aborted' (or 'forcing job termination') once it has SIGKILLed the step itself (a signal
    to srun, the job ending): the tasks it reports 'Killed' after it are that kill's, the node names no origin and no
    cause shows. A task reported Killed before srun aborted is still the origin."""
    hosts = [Host("gs03r2b02")]
    log = ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
           "srun: error: gs03r2b02: tasks 0,2-3: Killed\nsrun: Terminating StepId=38232896.0\n"
           "srun: error: gs03r2b02: task 1: Exited with exit code 1\n")
    v = verdict(log, patterns, allocation=hosts)
    assert v.failure_class is FailureClass.UNKNOWN and v.blamed_hosts == () and v.exclude_hosts == ()
    forced = verdict("srun: forcing job termination\nsrun: error: n2: task 1: Killed\n", patterns)
    assert forced.failure_class is FailureClass.UNKNOWN and forced.blamed_hosts == ()
    first = verdict("srun: error: n2: task 1: Killed\n"
                    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n", patterns)
    assert first.failure_class is FailureClass.RANK_KILLED and first.blamed_hosts == (Host("n2"),)


# -- the generic pack: a meaning any program may word, read where no pack knows the program --------------------


@pytest.mark.parametrize(("text", "fclass", "blamed"), [
    # a crash signal or a negative status in any tool's words; a pdsh-style prefix names where
    ("node07: worker process terminated with return code -11\n", FailureClass.RANK_KILLED, ["node07"]),
    ("child process pid 1234 killed by signal 7 (Bus error)\n", FailureClass.RANK_KILLED, []),
    ("terminate called after throwing an instance of 'std::runtime_error'\n  what():  cannot open device\n",
     FailureClass.RANK_KILLED, []),
    # a program's own exception named for a mistake in its code or input (C++: std::logic_error and its kin)
    ("terminate called after throwing an instance of 'std::out_of_range'\n  what():  vector::_M_range_check\n",
     FailureClass.USER_ERROR, []),
    ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
     "mymodule.ConfigError: missing key 'lr'\n", FailureClass.USER_ERROR, []),
    ("PermissionError: [Errno 13] Permission denied: '/projects/shared/out.h5'\n", FailureClass.USER_ERROR, []),
    # a wall-time limit, a preemption, stated by whoever ran the job
    ("ERROR: Job 12345 exceeded its walltime limit and was terminated\n", FailureClass.WALLTIME, []),
    ("The job was preempted by a higher priority job and requeued\n", FailureClass.PREEMPTED, []),
    # a connection exception alone is network trouble ...
    ("ConnectionResetError: [Errno 104] Connection reset by peer\n", FailureClass.NETWORK, []),
    # ... but the crash that came first explains the peers' lost connections
    ("node07: worker process terminated with return code -11\n"
     "node08: ConnectionResetError: [Errno 104] Connection reset by peer\n", FailureClass.RANK_KILLED, ["node07"]),
    # ... and a program's error before it is the program's
    ("mymodule.ConfigError: missing key 'lr'\nnode08: ConnectionResetError: [Errno 104] Connection reset by peer\n",
     FailureClass.USER_ERROR, []),
    # a -9 is the run's summary: the OOM line says why
    ("worker process terminated with return code -9\n[  123.4] Out of memory: Killed process 4242 (python)\n",
     FailureClass.OOM, []),
    # a program's own fatal error, then the abort it stops with: the program's, nobody blamed ...
    ("[0] --> FOAM FATAL IO ERROR: \n[0] keyword nCellsInCoarsestLevel is undefined\n"
     "[node3:21638] *** Process received signal ***\n[node3:21638] Signal: Aborted (6)\n",
     FailureClass.USER_ERROR, []),
    # ... but a crash before a fatal error is the crash (a crash handler's message)
    ("node07: worker process terminated with return code -11\nFATAL ERROR: Charm++ caught a fatal signal\n",
     FailureClass.RANK_KILLED, ["node07"]),
    # a scheduler's job state quoted by any tool
    ("submitit: job 4242 finished in state NODE_FAIL\n", FailureClass.NODE_LOSS, []),
    ("Job 4242 finished in state OUT_OF_MEMORY\n", FailureClass.OOM, []),
    ("snakemake: job state: TIMEOUT\n", FailureClass.WALLTIME, []),
    # a list of possible causes is no statement of one
    ("Task failed because the node it was running on is dead or unavailable. This can happen if the node was "
     "preempted, had a hardware failure, or its raylet crashed unexpectedly.\n", None, []),
])
def test_generic_meanings(patterns: PatternSet, text: str, fclass: FailureClass | None, blamed: list[str]) -> None:
    v = verdict(text, patterns)
    if fclass is None:
        assert v.failure_class is not FailureClass.PREEMPTED
    else:
        assert v.failure_class is fclass, v.reason
    assert [h.raw for h in v.blamed_hosts] == blamed
    assert not v.exclude_hosts  # none of these is node-fault evidence


@pytest.mark.parametrize("line", [
    "ERROR: cannot open input file run.in",
    "Error: No such option: --nodes",
    "gcc: fatal error: no input files",
    "*** ERROR: unknown keyword 'nstep' in input deck",
])
def test_a_programs_own_error_line_is_the_last_resort(patterns: PatternSet, line: str) -> None:
    """A program no pack knows says what stopped it in an error line: when nothing else says why, that is the
    program's own stop (user_error, not retried), in the reason as the last resort."""
    v = verdict(f"step 1 loss 2.0\n{line}\n", patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and not v.blamed_hosts
    assert "generic.error_severity_line" in v.reason and "no other line says why" in v.reason


@pytest.mark.parametrize(("text", "rc", "expected"), [
    # the infrastructure's failure in a program's words: not the user's mistake
    ("Error: failed to connect to 10.0.0.5:29500\n", 1, FailureClass.UNKNOWN),
    ("ERROR: could not write checkpoint: no space left on device\n", 1, FailureClass.TRANSIENT_IO),
    ("Error: error in ptssup_mkcltsock_afunix()\n", 1, FailureClass.UNKNOWN),
    # a signal's exit status says more than the line before it
    ("ERROR: cannot open input file run.in\n", -11, FailureClass.RANK_KILLED),
    # a launcher's own error line has its own reading
    ("srun: error: n3: task 0: Segmentation fault\n", None, FailureClass.RANK_KILLED),
    # any line that says why decides first
    ("ERROR: bad value\nTraceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", 1, FailureClass.OOM),
    # a metric, not an error
    ("epoch 3 error: 0.0312\n", 1, FailureClass.UNKNOWN),
])
def test_the_last_resort_yields(patterns: PatternSet, text: str, rc: int | None, expected: FailureClass) -> None:
    assert verdict(text, patterns, rc=rc).failure_class is expected


@pytest.mark.parametrize(("line", "expected"), [
    ('Exception in thread "main" org.example.sim.DivergenceException: residual 1.0E30 at step 12',
     FailureClass.USER_ERROR),
    ('Exception in thread "main" picard.PicardException: Input file has no records', FailureClass.USER_ERROR),
    # a stream, a context or a peer gone, a wrapped failure: the library's word, not the program's mistake
    ('Exception in thread "main" java.io.EOFException', FailureClass.UNKNOWN),
    ('Exception in thread "main" java.lang.IllegalStateException: SparkContext has been shutdown', FailureClass.UNKNOWN),
    ('Exception in thread "main" java.util.concurrent.ExecutionException: org.example.Boom', FailureClass.UNKNOWN),
    # another thread's exception does not end the JVM
    ('Exception in thread "pool-1-thread-3" org.example.sim.DivergenceException: residual', FailureClass.UNKNOWN),
])
def test_the_main_threads_uncaught_java_exception_is_the_last_resort(
        patterns: PatternSet, line: str, expected: FailureClass) -> None:
    v = verdict(f"{line}\n\tat org.example.sim.Main.main(Main.java:12)\n", patterns, rc=1)
    assert v.failure_class is expected, v.reason
    if expected is FailureClass.USER_ERROR:
        assert "generic.java_main_uncaught" in v.reason and "no other line says why" in v.reason


@pytest.mark.parametrize(("text", "expected"), [
    ("Error using horzcat\nDimensions of arrays being concatenated are not consistent.\n\nError in run_model (line 12)\n",
     FailureClass.USER_ERROR),
    ("Unrecognized function or variable 'trainNet'.\n\nError in main (line 3)\n", FailureClass.USER_ERROR),
    # MATLAB's word for a recursion that overflowed the stack is the program's, though it says "Out of memory"
    ("Out of memory. The likely cause is an infinite recursion within the program.\n\nError in f (line 9)\n",
     FailureClass.USER_ERROR),
    ('Out of memory. Type "help memory" for your options.\n\nError in main (line 3)\n', FailureClass.OOM),
    ("Requested 50000x50000 (18.6GB) array exceeds maximum array size preference (15.9GB). This might cause MATLAB "
     "to become unresponsive.\n", FailureClass.OOM),
])
def test_matlabs_own_errors(patterns: PatternSet, text: str, expected: FailureClass) -> None:
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is expected and not v.blamed_hosts, v.reason


@pytest.mark.parametrize(("text", "expected"), [
    ("step=10 residual 1e-3\n SCF has not converged.  Exiting.\n", FailureClass.USER_ERROR),
    ("Convergence failure -- run terminated.\n", FailureClass.USER_ERROR),
    ("Error: Divergence detected in AMG solver: pressure correction\n", FailureClass.USER_ERROR),
    # a warning the solver went on after: not why the run ended
    ("WARNING: SCF not converged, continuing with the next step\n", FailureClass.UNKNOWN),
    # any line that says why decides first: the time limit the run went on until, the memory kill
    ("SCF not converged in 60 cycles\nslurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2024-01-01T00:00:00 DUE TO "
     "TIME LIMIT ***\n", FailureClass.WALLTIME),
    ("Newton solver did not converge\nslurmstepd: error: Detected 1 oom_kill event in StepId=7.0. Some of the step "
     "tasks have been OOM Killed.\n", FailureClass.OOM),
])
def test_a_solvers_own_words_for_failed_numerics(patterns: PatternSet, text: str, expected: FailureClass) -> None:
    """A solver that did not converge, diverged or found a NaN stopped over its numerics (the program's input and
    model: not retried), unless it went on after the words or another line says why the run ended."""
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is expected and not v.blamed_hosts, v.reason


@pytest.mark.parametrize("line", [
    'mpirun: Error: unknown option "-npernode"',
    "[mpiexec@r001] match_arg (utils/args/args.c:159): unrecognized argument pmi_args",
    "bsub: illegal option -- x",
])
def test_a_launcher_that_refuses_its_own_command_line_is_the_users_setup(patterns: PatternSet, line: str) -> None:
    """The launcher's or scheduler client's own words name no node: an option it does not know is the job script's
    (another MPI's flags), and every retry asks the same."""
    v = verdict(f"{line}\n", patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and not v.blamed_hosts, v.reason


_TB = 'Traceback (most recent call last):\n  File "run.py", line 10, in <module>\n    main()\n'


@pytest.mark.parametrize("line", [
    "mylib.errors.SimulationError: negative density in cell 42",
    "sklearn.exceptions.NotFittedError: This StandardScaler instance is not fitted yet.",
    "[rank1]: xarray.core.merge.MergeError: conflicting values for variable 'lat' on objects to be combined.",
    "Exception: Invalid configuration: nsteps must be positive",
    "OSError: Empty or corrupt FITS file",
    # Julia's report of the exception that ended a script heads the line itself
    'ERROR: LoadError: MyPkg.SolverError("diverged at step 12")',
    "ERROR: LoadError: PosDefException: matrix is not positive definite; Cholesky factorization failed.",
])
def test_a_traceback_that_ends_in_a_type_no_pack_knows_is_the_programs_own_stop(
        patterns: PatternSet, line: str) -> None:
    """The last line of a traceback names an exception of the program's or a library's own class: when no other
    line says why, the program raised it and stopped (user_error, not retried), as the last resort reads a bare
    error line."""
    tb = "" if line.startswith("ERROR:") else _TB
    v = verdict(f"step 1 loss 2.0\n{tb}{line}\n", patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and not v.blamed_hosts, v.reason
    assert "python.exception_line" in v.reason and "no other line says why" in v.reason


_FRAMES = '  File "mpi4py/MPI/msgbuffer.pxi", line 50, in mpi4py.MPI.downcast\n    raise ValueError(x)\n'


@pytest.mark.parametrize("prefix", ["", "[rank2]: ", "x4502c1s3b0n0: "])
def test_a_traceback_whose_header_the_paste_cut_is_read_by_its_frames(patterns: PatternSet, prefix: str) -> None:
    """A posted log often starts inside the traceback (the header cut, or many ranks' lines between): a frame line
    above the exception stands for the header."""
    text = "".join(f"{prefix}{line}\n" for line in (_FRAMES + "OverflowError: integer 2372038530 does not fit in 'int'"
                                                     ).splitlines())
    v = verdict(f"step 1 loss 2.0\n{text}", patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and not v.blamed_hosts, v.reason
    assert "python.exception_line" in v.reason


@pytest.mark.parametrize(("text", "rc"), [
    # a command's failure relayed by a helper that ran it, whatever the exception's type
    (f"{_FRAMES}RuntimeError: Command ['cactus_bar', '--logLevel', 'INFO'] exited 128: stdout=\n", 1),
    (f"{_FRAMES}Exception: Call '/bin/bash user_script.sh' returned 256.\n", 1),
    # a process that died under the work (Ray's exceptions for a lost owner, worker or object)
    (f"{_FRAMES}ray.exceptions.OwnerDiedError: Failed to retrieve object 00ffffffffffffffffffffff.\n", 1),
    (f"{_TB}ray.exceptions.WorkerCrashedError: The worker died unexpectedly while executing this task.\n", 1),
    # the infrastructure in the type or the message
    (f"{_TB}ray.exceptions.RaySystemError: System error: Failed to connect to GCS at 10.0.0.1:6379\n", 1),
    (f"{_TB}mpi4py.MPI.Exception: MPI_ERR_OTHER: known error not in list\n", 1),
    (f"{_TB}zmq.error.ZMQError: Address already in use\n", 1),
    (f"{_TB}mylib.DeviceError: device 3 did not answer\n", 1),
    # another process's failure relayed: says that it failed, not why
    (f"{_TB}subprocess.CalledProcessError: Command '['./solver', 'in.dat']' died with <Signals.SIGKILL: 9>.\n", 1),
    (f"{_TB}ipyparallel.error.RemoteError: AppFailure()\n", 1),
    ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"x.py\", line 3, in <module>\n"
     "[rank0]: mylib.runner.JobFailedError: solver step 3\n", 1),
    ("[rank0]: Traceback (most recent call last):\n[rank0]: SystemExit: 2\n", 1),
    (f"{_TB}snakemake.exceptions.RuleException: CalledProcessError in line 72 of rules/trim.smk\n", 1),
    ("ERROR: LoadError: ProcessExitedException(3)\nStacktrace:\n", 1),
    ("ERROR: LoadError: TaskFailedException\n", 1),
    # no traceback above it: a line that only looks like one
    ("mylib.errors.SimulationError: negative density in cell 42\n", 1),
    # the run went on after it: a caught exception logged with its traceback
    (f"{_TB}mylib.errors.FetchError: bad block 12\nstep=2 loss=1.9\n", 1),
    # ignored by Python
    (f"Exception ignored in: <function Pool.__del__ at 0x7f1c2a3b4c10>\n{_TB}mylib.errors.PoolError: closed\n", 1),
    # an exit, not an error; a signal's exit status says more
    (f"{_TB}SystemExit: 2\n", 1),
    (f"{_TB}mylib.errors.SimulationError: negative density in cell 42\n", -9),
])
def test_a_traceback_of_an_unknown_type_yields(patterns: PatternSet, text: str, rc: int) -> None:
    """An unknown exception type that speaks of the infrastructure, relays another process's failure, stands
    without a traceback, was outlived by the run or ignored, was an exit, or a crash's exit status: not read as
    the user's mistake."""
    v = verdict(text, patterns, rc=rc)
    assert v.failure_class is not FailureClass.USER_ERROR, v.reason


_SAGEMAKER_WAIT = (f"{_TB}  File \"/opt/conda/lib/python3.6/site-packages/sagemaker/session.py\", line 3245, in "
                   "_check_job_status\n    actual_status=status,\n")


@pytest.mark.parametrize("reason", [
    "Error for Training job cluster-eames-: Failed. Reason: AlgorithmError: ExecuteUserScriptError:",
    "Error for Training job rf-2023-09-28-07-37-56-820: Failed. Reason: AlgorithmError: Exit Code: 1",
    "Error for Training job p-2019: Failed Reason: CapacityError: Unable to provision requested ML compute capacity.",
])
def test_a_sagemaker_clients_wait_that_gave_up_is_not_the_users_mistake(patterns: PatternSet, reason: str) -> None:
    """The SageMaker SDK's _check_job_status raises UnexpectedStatusException when the training job it waits on
    failed (heldout681): the notebook's traceback relays the remote job's end, not a mistake of the code that
    raised it; with no reason a pack knows, nothing says why."""
    v = verdict(f"{_SAGEMAKER_WAIT}sagemaker.exceptions.UnexpectedStatusException: {reason}\n", patterns)
    assert v.failure_class is not FailureClass.USER_ERROR, v.reason


def test_a_sagemaker_client_error_reason_is_the_users(patterns: PatternSet) -> None:
    """The same relay quoting SageMaker's ClientError (the customer's input or configuration): the quoted reason
    decides, user_error, nobody blamed (heldout681)."""
    v = verdict(f"{_SAGEMAKER_WAIT}ValueError: Error for Training job xgboost-2019-02-01-09-57-04-694: Failed Reason: "
                "ClientError: Failed to load libsvm data with exception:\n", patterns)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and not v.blamed_hosts, v.reason
    assert "sagemaker_client_error" in v.reason


def test_cloud_ml_engine_accelerator_quota_failure_is_the_users_request(patterns: PatternSet) -> None:
    """Cloud ML Engine's 429 'Quota failure for project ... The request for 2 K80 accelerators exceeds the allowed
    maximum of 0 ...': the submitter's request refused by its quota, user_error, not retryable (heldout681)."""
    text = ('"error": {\n    "code": 429,\n    "message": "Quota failure for project qwiklabs-gcp-XXXXXXXX. The request '
            'for 2 K80 accelerators exceeds the allowed maximum of 0 A100, 0 K80, 0 P100, 0 V100 accelerators.",\n'
            '    "status": "RESOURCE_EXHAUSTED",\n')
    v = verdict(text, patterns)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and not v.blamed_hosts, v.reason


def test_a_pilot_jobs_failure_is_not_the_users_mistake(patterns: PatternSet) -> None:
    """RADICAL-Pilot's state callback raises RuntimeError('pilot pilot.0000 failed - fatal!') when the pilot job the
    tasks run in fails: the executor was lost, the log does not say why; not read as the user's mistake."""
    text = (f"{_TB}  File \"/env/lib/python2.7/site-packages/radical/pilot/compute_pilot.py\", line 132, in "
            "_default_state_cb\n    raise RuntimeError('pilot %s failed - fatal!' % self.uid)\n"
            "RuntimeError: pilot pilot.0000 failed - fatal!\n")
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is not FailureClass.USER_ERROR and not v.blamed_hosts, v.reason
    assert verdict(f"{_TB}mylib.errors.AutopilotError: autopilot gain out of range\n", patterns,
                   rc=1).failure_class is FailureClass.USER_ERROR


@pytest.mark.parametrize("line", [
    "FATAL: Unable to handle docker://ubuntu (dial tcp: lookup registry-1.docker.io: Temporary failure in name resolution)",
    "ERROR: Read-only file system: '/scratch/run/out.h5'",
    "Error: service busy, try again later",
    "error: unable to reach the licence service: no route to host",
    "ERROR (unhandled task failure): EOFError: read end of file",  # a peer gone (Julia Distributed)
])
def test_the_last_resort_reads_no_infrastructure_line(patterns: PatternSet, line: str) -> None:
    """A bare error line that speaks of the infrastructure (a name lookup, a read-only file system, a busy service,
    a route) is not read as the user's mistake: the failure is not called user_error (a retry may finish it)."""
    assert verdict(f"{line}\n", patterns, rc=1).failure_class is not FailureClass.USER_ERROR


@pytest.mark.parametrize("prefix", [
    f"x4102c5s3b0n0.{AURORA} 12: ",  # HPE Cray PALS mpiexec --label
    "trainer-1  | ",                   # docker compose
    "        | [rank0]: ",             # a report's bare "| " gutter (milabench), then the rank's own prefix
    "12:34:56 ",                       # a bare time of day
    "Mar  5 10:11:12 node01 python3[12345]: ",      # syslog / journalctl: time, host, the program's tag
    "2024-03-05T10:11:12+0100 node01 python3[12345]: ",  # journalctl -o short-iso
    "- ", "  * ",                                   # a Markdown list item holding the pasted line
    "  2. ",                                        # a numbered list (pastebin numbers every pasted line)
])
def test_a_ranks_exception_is_read_behind_more_line_prefixes(patterns: PatternSet, prefix: str) -> None:
    text = "".join(f"{prefix}{line}\n" for line in (
        "Traceback (most recent call last):", '  File "t.py", line 3, in <module>', "IndexError: list index out of range"))
    assert verdict(text, patterns, rc=1).failure_class is FailureClass.USER_ERROR


@pytest.mark.parametrize("prefix", [
    "2024/03/05 10:11:12 ",                                     # Go's log package
    "2024/03/05 10:11:12.123456 ",                              # Go's log with microseconds
    "24/03/05 10:11:12 ERROR ",                                 # log4j's yy/MM/dd (Spark, Hadoop) and a level word
    "03/05/2024 10:11:12 AM ",                                  # a US date with AM/PM
    "2024-03-05 10:11:12,123 - train - ERROR - ",               # Python logging's asctime - name - levelname -
    "2024-03-05 10:11:12.123 | ERROR    | train:main:42 - ",    # loguru's default format
    "Mar-05 10:11:12.123 [main] ERROR nextflow.cli - ",         # Nextflow's .nextflow.log
    "[rank3]: 2024-03-05 10:11:12,123 - train - INFO - ",       # a rank's tag, then its logger's
    "(head, rank=0, pid=4503) ",                                # SkyPilot's per-node Ray task
    "(sky-service-7080, pid=2846) ",                            # SkyPilot's single-node task
])
def test_a_line_is_read_behind_a_logging_frameworks_prefix(patterns: PatternSet, prefix: str) -> None:
    """A logging framework puts its own date, logger name and level before each line it writes (Go's log, log4j,
    Python's logging, loguru, Nextflow's log): a line that opens with its host, read anchored, is still read behind
    them (each of these hid it: nothing was blamed), and a program's own bare refusal is still its refusal."""
    got = verdict(f"{prefix}x1921c7s1b0n0: rank 5 died from signal 9\n", patterns, rc=1)
    assert got.failure_class is FailureClass.RANK_KILLED and got.blamed_hosts == (Host("x1921c7s1b0n0"),), got.reason
    got = verdict(f"{prefix}Error: No such option: --nodes\n", patterns, rc=1)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason


def test_an_exception_behind_spacks_arrow_banner_is_read(patterns: PatternSet) -> None:
    """Spack prints its messages behind an arrow ('==> Error: ...'); an exception it relays there (a package's test
    that raised) is the exception, read by the anchored patterns as it is without the arrow."""
    got = verdict("==> Testing package slate-2021.05.02-eh6rahv\n"
                  "==> Error: AttributeError: 'NoneType' object has no attribute 'command'\n", patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason


def test_sparks_summary_of_a_failed_task_is_not_the_programs_refusal(patterns: PatternSet) -> None:
    """Spark's driver logs that a task used up its attempts and a writer aborts its job at ERROR level, behind
    log4j's date: they say a task failed, not why (here a Python worker crashed), so the last resort does not read
    them as the user's mistake and the run is not stopped as one."""
    text = ("20/06/07 19:20:42 ERROR TaskSetManager: Task 1 in stage 9.0 failed 1 times; aborting job\n"
            "20/06/07 19:20:42 ERROR FileFormatWriter: Aborting job b0aa29b9-042f-4362-9d54-de936645d883.\n"
            "org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 9.0 failed 1 times, "
            "most recent failure: Lost task 1.0 in stage 9.0 (TID 408, localhost, executor driver): "
            "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)\n")
    assert verdict(text, patterns).failure_class is not FailureClass.USER_ERROR


@pytest.mark.parametrize(("line", "expected"), [
    # patterns whose "^" stands inside a choice: "(?:^|\s)...", "one|^two"
    ("[1,0]<stderr>:ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
     "memory (shm).", "python.dataloader_worker_crash"),
    ("> # State:           COMPLETED (exit code 0)", "slurm.job_end_completed"),
    ("2024-03-05T10:11:12.123Z ping failed on x1: No reply from x4307c2s6b0n0 after 120s", "pals.ping_no_reply"),
])
def test_an_anchor_inside_a_pattern_allows_the_line_prefixes(patterns: PatternSet, line: str, expected: str) -> None:
    """Every "^" that anchors allows the prefixes real pastes carry (a quoted reply, Open MPI's tag, a timestamp),
    not only one that opens the regex: these lines were unread behind them."""
    assert expected in [e.pattern for e in scan(f"{line}\n".encode(), patterns).evidence]


def test_a_pals_label_names_the_node_a_crash_was_printed_on(patterns: PatternSet) -> None:
    """PALS's --label puts "host rank: " before each line: a crash line that names no host is about that node."""
    v = verdict(f"x4102c5s3b0n0.{AURORA} 12: Fatal Python error: Segmentation fault\n"
                f"x4102c5s4b0n0.{AURORA} 13: step 3 loss 2.1\n", patterns, rc=139)
    assert v.failure_class is FailureClass.RANK_KILLED and names(v.blamed_hosts) == ["x4102c5s3b0n0"]


def test_a_launcher_line_of_the_same_shape_is_not_the_last_resort(patterns: PatternSet) -> None:
    """"srun: error: ..." has the shape of a program's error line: the scanner records only the launcher's pattern
    on it, so the last resort is still free to read the program's own line after it."""
    result = scan(b"srun: error: Node failure on n2\n", patterns)
    assert [e.pattern for e in result.evidence] == ["slurm.srun_node_failure"]
    v = verdict("srun: error: n1: task 0: Exited with exit code 1\nERROR: cannot open input file run.in\n",
                patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and "line 2" in v.reason


def test_argps_refusal_hint_is_the_last_resort_even_for_a_launcher(patterns: PatternSet) -> None:
    """GNU argp prints "Try `prog --help' or `prog --usage' for more information." only when it refuses the command
    line (glibc argp-help.c, ARGP_HELP_SEE): a wrong call, even when the program is a launcher (jsrun, IBM/CAST#140);
    a launcher's other lines stay the infrastructure's. Another tool's advice to read its help is no refusal."""
    text = ("Error, invalid argument: -E\n\nUsage: jsrun [OPTION...] [<command>]\n"
            "Try `jsrun --help' or `jsrun --usage' for more information.\n")
    v = verdict(text, patterns, rc=1)
    assert v.failure_class is FailureClass.USER_ERROR and not v.blamed_hosts and "line 4" in v.reason
    assert verdict("See 'ls --help' for the options.\n", patterns, rc=1).failure_class is FailureClass.UNKNOWN


def test_a_step_cancelled_after_sruns_own_teardown_is_no_cancellation(patterns: PatternSet) -> None:
    """srun says "Terminating StepId" only when it kills the step itself (a task's abnormal exit, -W's timer): the
    step's CANCELLED line after it is that teardown, not a user's scancel; without it, the line is a cancellation."""
    failed = "srun: error: n1: task 17: Exited with exit code 1\n"
    terminating = "srun: launch/slurm: _step_signal: Terminating StepId=56638155.27\n"
    tail = ("slurmstepd: error: *** STEP 56638155.27 ON n2 CANCELLED AT 2022-03-25T02:52:22 ***\n"
            "srun: error: n2: tasks 1-2: Terminated\n")
    torn = verdict(failed + terminating + tail, patterns)
    assert torn.failure_class is not FailureClass.CANCELLED and not torn.blamed_hosts
    assert verdict(tail, patterns).failure_class is FailureClass.CANCELLED


def test_a_step_cancelled_after_a_tasks_nonzero_exit_is_its_teardown(patterns: PatternSet) -> None:
    """srun reports a task's non-zero exit as the task ends (src/srun/launch.c _task_finish) and then ends the step
    itself (--kill-on-bad-exit, or the MPI or PMIx abort that made the exit): a step's CANCELLED line with no reason
    after that report is the exit's teardown, not a user's scancel, even with no 'Terminating StepId' line between
    (heldout723); the exit alone says nothing of why, so the run's end is unknown and nobody is blamed. A scancel's
    tasks are reported after its CANCELLED line: there the line is still a cancellation, and so is a JOB's
    CANCELLED line (a scancel of the job) after the exit."""
    exited = "srun: error: n1: task 1: Exited with exit code 1\n"
    cancel = "slurmstepd: error: *** STEP 4231.0 ON n1 CANCELLED AT 2021-08-10T13:38:25 ***\n"
    killed = "srun: error: n1: task 0: Killed\n"
    torn = verdict(exited + cancel + killed, patterns)
    assert torn.failure_class is FailureClass.UNKNOWN and not torn.blamed_hosts, torn.reason
    boxed = verdict("".join("\u2502 " + line for line in (exited, cancel, killed)), patterns)
    assert boxed.failure_class is FailureClass.UNKNOWN and not boxed.blamed_hosts, boxed.reason
    scancel = verdict(cancel + exited, patterns)
    assert scancel.failure_class is FailureClass.CANCELLED, scancel.reason
    job = verdict(exited + "slurmstepd: error: *** JOB 4231 ON n1 CANCELLED AT 2021-08-10T13:38:25 ***\n", patterns)
    assert job.failure_class is FailureClass.CANCELLED, job.reason


def test_a_step_cancelled_after_an_mpi_errors_are_fatal_abort_is_no_cancellation(patterns: PatternSet) -> None:
    """Open MPI's MPI_ERRORS_ARE_FATAL handler aborts the job itself (PMI_Abort under srun): the step's CANCELLED
    line after its banner is that abort's teardown, and the SIGKILL srun then reports for the other rank names no
    origin; the banner alone says nothing of why, so the run's end is unknown, not a user's cancellation."""
    banner = ("[n1:90693] *** An error occurred in MPI_Send\n"
              "[n1:90693] *** reported by process [22806528,0]\n"
              "[n1:90693] *** on communicator MPI_COMM_WORLD\n"
              "[n1:90693] *** MPI_ERR_OTHER: known error not in list\n"
              "[n1:90693] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n"
              "In: PMI_Abort(16, N/A)\n")
    tail = ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
            "slurmstepd: error: *** STEP 348.0 ON n1 CANCELLED AT 2022-08-22T09:51:30 ***\n"
            "srun: error: n2: task 1: Killed\n")
    torn = verdict(banner + tail, patterns)
    assert torn.failure_class is FailureClass.UNKNOWN and not torn.blamed_hosts
    assert verdict(tail, patterns).failure_class is FailureClass.CANCELLED


LMOD = 'Lmod has detected the following error: The following module(s) are unknown: "cuda/11.8"\n'
NO_MODULE_COMMAND = "/var/spool/slurmd/job123456/slurm_script: line 5: module: command not found\n"


@pytest.mark.parametrize("setup", [LMOD, NO_MODULE_COMMAND])
@pytest.mark.parametrize(("after", "rc", "expected"), [
    ("", 1, FailureClass.USER_ERROR),  # alone: the site does not offer what the script asks for
    ("srun: error: n3: task 0: Segmentation fault (core dumped)\n", None, FailureClass.RANK_KILLED),
    ("[n3:4242] *** Process received signal ***\n[n3:4242] Signal: Segmentation fault (11)\n", 139,
     FailureClass.RANK_KILLED),
    ("Out of memory: Killed process 4242 (python) total-vm:1234kB\n", None, FailureClass.OOM),
    ("NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4242> with error 12, opcode 0, len 0, vendor err 129\n",
     None, FailureClass.NETWORK),
    ("[rank3]:[E ProcessGroupNCCL.cpp:1182] [Rank 3] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=1, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800305 milliseconds before timing out.\n",
     None, FailureClass.NETWORK),
    ("", -15, FailureClass.UNKNOWN),  # stopped from outside: the setup line did not end the run
])
def test_a_module_that_did_not_load_yields_to_what_the_program_then_says(
        patterns: PatternSet, setup: str, after: str, rc: int | None, expected: FailureClass) -> None:
    """A job script goes on past a module load that failed (or a shell with no `module` command at all): a crash,
    an OOM, a fabric error or a collective's timeout after it decides; alone, with the program's own non-zero exit,
    it is the job's setup that is wrong."""
    assert verdict(setup + after, patterns, rc=rc).failure_class is expected



SOURCED_FILES = [
    "/var/spool/slurm/job45278/slurm_script: line 13: /etc/profile.d/TMI.sh: No such file or directory\n",
    "/var/spool/slurmd/job77/slurm_script: line 9: /home/u/miniconda3/etc/profile.d/conda.sh: No such file or directory\n",
    "/var/spool/slurmd/job77/slurm_script: line 4: /usr/share/lmod/lmod/init/bash: No such file or directory\n",
    # the environment's own activate script, sourced, failing inside (conda 4.3's shell/activate, heldout620)
    "/home/u/miniconda3/envs/parsl/bin/activate: line 97: /home/u/miniconda3/envs/parsl/bin/conda: No such file or "
    "directory\n",
]
TIME_LIMIT = "slurmstepd: error: *** JOB 45278 ON n027 CANCELLED AT 2025-01-21T14:55:30 DUE TO TIME LIMIT ***\n"
SCANCEL = "slurmstepd: error: *** JOB 47152 ON n037 CANCELLED AT 2025-02-10T14:20:50 ***\n"


@pytest.mark.parametrize("setup", SOURCED_FILES)
@pytest.mark.parametrize(("after", "expected"), [
    (TIME_LIMIT, FailureClass.WALLTIME),
    (SCANCEL, FailureClass.CANCELLED),
])
def test_a_start_up_file_the_script_could_not_source_yields_to_what_follows(
        patterns: PatternSet, setup: str, after: str, expected: FailureClass) -> None:
    """bash's '.'/'source' of a missing start-up file (evalfile.c file_error) is set-up the script runs on past:
    the time limit or the cancel after it decides (heldout460)."""
    assert verdict(setup + after, patterns).failure_class is expected


def test_a_missing_program_path_before_a_time_limit_is_not_a_start_up_file(patterns: PatternSet) -> None:
    """The same words of a program the script runs by path are not set-up: that rule stays as it was."""
    line = "/var/spool/slurmd/job77/slurm_script: line 13: /opt/vasp/bin/vasp_std: No such file or directory\n"
    assert verdict(line + TIME_LIMIT, patterns).failure_class is not FailureClass.WALLTIME


CUDA_HOOK = ("CUDA Hook Library: Failed to find symbol mem_find_dreg_entries, ./a.out: undefined symbol: "
             "__PAMI_Invalidate_region\n")


@pytest.mark.parametrize(("after", "rc", "expected"), [
    ("", None, FailureClass.USER_ERROR),  # alone: the launch line's set-up (CUDA before MPI_Init, the hook on)
    ("[h41n08:4242] *** Process received signal ***\n[h41n08:4242] Signal: Segmentation fault (11)\n", 139,
     FailureClass.RANK_KILLED),
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with exit code 140.\n", None,
     FailureClass.WALLTIME),
    ("", 0, FailureClass.SUCCESS),  # harmless this time: the job exited 0
])
def test_spectrum_mpi_cuda_hook_warning_yields_to_what_the_program_then_says(
        patterns: PatternSet, after: str, rc: int | None, expected: FailureClass) -> None:
    """Spectrum MPI's CUDA hook that found no PAMI symbols is harmless or fatal depending on context (OLCF's Summit
    guide): a crash or a limit after it decides, exit 0 is success, and alone it is the user's launch set-up."""
    assert verdict(CUDA_HOOK + after, patterns, rc=rc).failure_class is expected

CONDA_SHELL_NOT_SET_UP = (
    "\nCommandNotFoundError: Your shell has not been properly configured to use 'conda activate'.\n"
    "To initialize your shell, run\n\n    $ conda init <SHELL_NAME>\n\n"
    "IMPORTANT: You may need to close and restart your shell after running 'conda init'.\n\n")


@pytest.mark.parametrize(("after", "rc", "expected"), [
    ("", 1, FailureClass.USER_ERROR),  # alone: the job ran without its environment
    ("slurmstepd-n3: error: *** JOB 12845038 ON n3 CANCELLED AT 2021-08-23T10:00:58 DUE TO TIME LIMIT ***\n", None,
     FailureClass.WALLTIME),
    ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
     "ModuleNotFoundError: No module named 'torch'\n", 1, FailureClass.USER_ERROR),
])
def test_a_conda_activate_the_shell_was_not_set_up_for_is_setup(
        patterns: PatternSet, after: str, rc: int | None, expected: FailureClass) -> None:
    """conda's CommandNotFoundError for 'conda activate' in a batch shell without conda's shell function ends only
    that command: the script runs on, so the scheduler's time limit after it (progress lines or not) decides, as
    the program's own error does; alone, it is the job's setup that is wrong."""
    assert verdict(CONDA_SHELL_NOT_SET_UP + after, patterns, rc=rc).failure_class is expected


IGNORED_IN_DESTRUCTOR = (
    "Exception ignored in: <function Pool.__del__ at 0x7f3a2c1e5ee0>\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/multiprocessing/pool.py", line 268, in __del__\n'
    "    self._change_notifier.put(None)\n"
    "AttributeError: 'NoneType' object has no attribute 'put'\n")
IGNORED_AT_EXIT = (
    "Error in atexit._run_exitfuncs:\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/wandb/sdk/wandb_run.py", line 2102, in _atexit_cleanup\n'
    "KeyError: 'run'\n")


@pytest.mark.parametrize("ignored", [IGNORED_IN_DESTRUCTOR, IGNORED_AT_EXIT])
@pytest.mark.parametrize(("after", "rc", "expected"), [
    ("", 1, FailureClass.UNKNOWN),  # alone: the exception did not end the run, so nothing says what did
    ("Out of memory: Killed process 4242 (python) total-vm:1234kB\n", None, FailureClass.OOM),
    ("[rank0]: RuntimeError: DataLoader worker (pid 2637) is killed by signal: Killed.\n", None,
     FailureClass.RANK_KILLED),
    # The same pattern's line again, other words: the run's own error decides.
    ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
     "IndexError: list index out of range\n", 1, FailureClass.USER_ERROR),
])
def test_an_exception_python_ignored_does_not_decide(
        patterns: PatternSet, ignored: str, after: str, rc: int | None, expected: FailureClass) -> None:
    """CPython prints an exception it could not raise (a destructor's, an exit handler's) and goes on: the error
    that ended the run decides, wherever the ignored one stands."""
    result = verdict(ignored + after, patterns, rc=rc)
    assert result.failure_class is expected
    if expected is FailureClass.USER_ERROR:
        assert "IndexError" in result.reason


def test_an_infrastructure_error_python_ignored_still_counts(patterns: PatternSet) -> None:
    """A full disk in an exit handler still says what state the machine is in; a program error after an ignored
    block is the run's own, whichever came first."""
    quota = ("Error in atexit._run_exitfuncs:\nTraceback (most recent call last):\n"
             '  File "/opt/deepspeed/ops/transformer/inference/triton/matmul_ext.py", line 96, in put\n'
             "OSError: [Errno 122] Disk quota exceeded: '/home/u/.triton/autotune/Fp16Matmul_2d_kernel.pickle'\n")
    assert verdict(quota, patterns, rc=1).failure_class is not FailureClass.USER_ERROR
    assert verdict(quota, patterns, rc=1).failure_class is not FailureClass.UNKNOWN
    error = "ValueError: expected 3 channels, got 4\n"
    assert verdict(error + IGNORED_AT_EXIT, patterns, rc=1).failure_class is FailureClass.USER_ERROR


@pytest.mark.parametrize("line", [
    " error file: /scratch/u/run0001/ID0000001/preprocess_ID0000001.err.000",  # pegasus-analyzer's failed-job table
    "stderr_log = /home/u/job.err",
])
def test_a_field_naming_where_errors_go_is_not_the_last_resort(patterns: PatternSet, line: str) -> None:
    """A report's field that names the file errors go to is a label and a path, not an error the program printed."""
    assert verdict(f"{line}\n", patterns, rc=1).failure_class is not FailureClass.USER_ERROR


def test_a_field_label_followed_by_the_error_itself_is_read(patterns: PatternSet) -> None:
    """An issue template's 'Error Log:' field with the log pasted after it (slime#274, heldout166) is the error, not a
    label and a path: torch_memory_saver's CUresult 2 reads as out of memory."""
    line = ("Error Log:`[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=csrc/utils.h "
            "func=cu_mem_create line=187`\n")
    assert verdict(line, patterns).failure_class is FailureClass.OOM
    assert verdict("error file: job.err.000\n", patterns, rc=1).failure_class is not FailureClass.USER_ERROR


def test_an_error_line_that_says_it_was_ignored_is_not_the_last_resort(patterns: PatternSet) -> None:
    line = ("ERROR: ld.so: object '/usr/lib64/libjemalloc.so' from LD_PRELOAD cannot be preloaded "
            "(cannot open shared object file): ignored.\n")
    assert verdict(line, patterns, rc=1).failure_class is FailureClass.UNKNOWN


def test_a_program_error_the_job_worked_on_after_yields_to_the_schedulers_stop(patterns: PatternSet) -> None:
    """A program error the batch script went on after (a step of the script that failed, tqdm items done after it)
    did not end the run: the time limit or the scancel that stopped it later decides. With no progress after the
    error, the error still decides (the job hung on after it until the limit). (conda's failed 'conda activate' is
    a setup line and yields to the stop either way: test_a_conda_activate_the_shell_was_not_set_up_for_is_setup.)"""
    error = "ValueError: could not convert string to float: 'n/a'\n"
    bar = "  2%|▏         | 1/50 [10:31<8:35:20, 631.04s/it]\n"
    limit = "slurmstepd: error: *** JOB 42221 ON c1 CANCELLED AT 2022-04-14T16:20:46 DUE TO TIME LIMIT ***\n"
    cancel = "slurmstepd: error: *** JOB 41994 ON c1 CANCELLED AT 2022-04-14T14:03:49 ***\n"
    assert verdict(error + bar + limit, patterns).failure_class is FailureClass.WALLTIME
    assert verdict(error + bar + cancel, patterns).failure_class is FailureClass.CANCELLED
    assert verdict(error + limit, patterns).failure_class is FailureClass.USER_ERROR


def test_a_ranks_own_oom_takes_the_host_of_pals_exit_line_for_that_rank(patterns: PatternSet) -> None:
    """ezpz docs, Aurora torchtitan job: '[rank7]: ... OUT_OF_RESOURCES' names no host; PALS's exit line for rank 7
    does. The same rank number ties them: that host is where the OOM started (blamed, not excluded); the rank that
    died of the teardown's SIGTERM elsewhere stays a mention."""
    v = verdict(
        "[rank7]: RuntimeError: level_zero backend failed with error: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)\n"
        f"x4610c4s3b0n0.{AURORA}: rank 7 exited with code 1\n"
        f"x4610c4s5b0n0.{AURORA}: rank 14 died from signal 15\n",
        patterns, rc=143,
    )
    assert v.failure_class is FailureClass.OOM
    assert names(v.blamed_hosts) == ["x4610c4s3b0n0"]
    assert names(v.exclude_hosts) == []


def test_a_ranks_oom_with_another_ranks_exit_line_names_no_host(patterns: PatternSet) -> None:
    """The exit line is for a different rank: no tie, no host."""
    v = verdict(
        "[rank7]: RuntimeError: level_zero backend failed with error: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)\n"
        f"x4610c4s3b0n0.{AURORA}: rank 3 exited with code 1\n",
        patterns, rc=1,
    )
    assert v.failure_class is FailureClass.OOM
    assert names(v.blamed_hosts) == []


def test_a_ranks_gpu_fault_takes_the_host_of_cray_mpich_abort_header_for_that_rank(patterns: PatternSet) -> None:
    """E3SM on Perlmutter (srun -l): rank 2047's Kokkos line says its GPU was busy or unavailable and names no host;
    Cray MPICH's abort header for rank 2047 does ('[nid004069] - Abort(1)'). The same rank number ties them: that
    node's GPU is at fault (blamed and kept out); the MPI_Abort is the runtime's reaction, not a user error."""
    v = verdict(
        "2047: cudaSetDevice(cuda_device_id) error( cudaErrorDevicesUnavailable): CUDA-capable device(s) is/are "
        "busy or unavailable /src/kokkos/core/src/Cuda/Kokkos_Cuda_Instance.cpp:544\n"
        "2047: MPICH ERROR [Rank 2047] [job id 57638547.0] [Fri Aug 28 22:45:13 2026] [nid004069] - Abort(1) (rank "
        "2047 in comm 432): application called MPI_Abort(comm=0xC4000001, 1) - process 2047\n",
        patterns,
    )
    assert v.failure_class is FailureClass.GPU_HW
    assert names(v.blamed_hosts) == ["nid004069"]
    assert names(v.exclude_hosts) == ["nid004069"]


def test_a_ranks_gpu_fault_with_another_ranks_mpich_header_names_no_host(patterns: PatternSet) -> None:
    """The abort header is for a different rank (and only a lead): no tie, no host."""
    v = verdict(
        "7: cudaSetDevice(dev) error( cudaErrorDevicesUnavailable): CUDA-capable device(s) is/are busy or unavailable\n"
        "3: MPICH ERROR [Rank 3] [job id 1.0] [Fri Aug 28 22:45:13 2026] [nid001300] - Abort(1) (rank 3 in comm 0): "
        "application called MPI_Abort(comm=0xC4000001, 1) - process 3\n",
        patterns,
    )
    assert v.failure_class is FailureClass.GPU_HW
    assert names(v.blamed_hosts) == []


LSF_HEADER = ("Job was executed on host(s) <n-62-20-12>, in queue <gpuv100>, as user <s1> in cluster <dcc> at "
              "Sun Mar 31 10:49:08 2024\n")
SLURM_MEMORY_KILL = "slurmstepd: error: Job 42664148 exceeded memory limit (10889240 > 4194304), being killed\n"


@pytest.mark.parametrize(("text", "origin"), [
    # The batch host's own slurmstepd: the job ran there.
    (SLURM_MEMORY_KILL + "slurmstepd: error: *** JOB 42664148 ON cn3152 CANCELLED AT 2017-06-06T00:11:58 ***\n",
     "cn3152"),
    (LSF_HEADER + "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 98.00 MiB.\n", "n-62-20-12"),
    ("GPUassert: out of memory common/join.cu 80\n"
     "x3101c0s13b0n0.hsn.cm.polaris.alcf.anl.gov: rank 0 exited with code 2\n", "x3101c0s13b0n0"),
    ("cdip@nid002070:~/models> python3 01_train.py\nMemoryError\n", "nid002070"),
    ("Node:         gke-train-pool-1-9c1f2a3b-x7kq/10.128.0.5\n"
     "      Reason:       OOMKilled\n", "gke-train-pool-1-9c1f2a3b-x7kq"),
    # The batch script's own word of where it runs.
    ("### Starting job on host: gpu-a100-07 at Tue Mar  4 10:00:00 UTC 2025\n"
     "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 98.00 MiB.\n", "gpu-a100-07"),
    # A step's line names only the step's first node: hundreds of ranks may have run elsewhere.
    ("ERROR on proc 617: Failed to reallocate 1650272 bytes for array comm:buf_send (src/memory.cpp:105)\n"
     "slurmstepd: error: *** STEP 2489114.1 ON h053 CANCELLED AT 2022-11-15T09:38:39 ***\n", None),
    # Two hosts named: which one ran out is not said.
    (LSF_HEADER + "MemoryError\nx3101c0s13b0n0: rank 3 exited with code 1\n", None),
])
def test_an_out_of_memory_line_naming_no_host_is_placed_on_the_one_host_the_job_ran_on(
        patterns: PatternSet, text: str, origin: str | None) -> None:
    result = verdict(text, patterns)
    assert result.failure_class is FailureClass.OOM
    assert [h.name for h in result.blamed_hosts] == ([origin] if origin else [])
    assert not result.exclude_hosts


def test_a_crash_naming_no_host_is_placed_on_the_one_host_the_job_ran_on_but_not_a_prompts(
        patterns: PatternSet) -> None:
    """A crash is blamed on where the job ran (never excluded: a crash is the program's); a pasted prompt is as often
    a login node the job was launched from, so it places no crash."""
    crash = "forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
    placed = verdict(LSF_HEADER + crash, patterns)
    assert placed.failure_class is FailureClass.RANK_KILLED
    assert [h.name for h in placed.blamed_hosts] == ["n-62-20-12"] and not placed.exclude_hosts
    prompted = verdict("[me@login01 run]$ mpirun -np 2 ./solver\n" + crash, patterns)
    assert prompted.failure_class is FailureClass.RANK_KILLED and not prompted.blamed_hosts
    # TACC's launcher names the node it starts a task on; bash's crash line under it names none.
    launched = verdict("starting job on c506-083\n/opt/apps/launcher/launcher-3.7/launcher: line 93: 285520 Bus "
                       "error               SentinelWrapper.py -c run.cfg\n", patterns)
    assert launched.failure_class is FailureClass.RANK_KILLED
    assert [h.name for h in launched.blamed_hosts] == ["c506-083"] and not launched.exclude_hosts
    two = verdict("starting job on c476-014\nstarting job on c476-042\n/opt/apps/launcher/launcher-3.7/launcher: "
                  "line 93: 364062 Bus error               SentinelWrapper.py -c run.cfg\n", patterns)
    assert two.failure_class is FailureClass.RANK_KILLED and not two.blamed_hosts
    # OpenMMLab's runner names the host it starts on (user@host); TorchElastic's failure table names its agent's host.
    mmcv = verdict("2022-10-23 14:27:35,879 - INFO - Start running, host: root@gpu-a12-0255, work_dir: /w/run\n"
                   "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -11) local_rank: 0 "
                   "(pid: 44260) of binary: /usr/bin/python\n", patterns)
    assert mmcv.failure_class is FailureClass.RANK_KILLED
    assert [h.name for h in mmcv.blamed_hosts] == ["gpu-a12-0255"] and not mmcv.exclude_hosts
    table = ("Root Cause (first observed failure):\n[0]:\n  time      : 2023-09-04_12:12:41\n"
             "  host      : {host}\n")
    crash = "Fatal Python error: Segmentation fault\n"
    tabled = verdict(crash + table.format(host="gpu17"), patterns)
    assert tabled.failure_class is FailureClass.RANK_KILLED
    assert [h.name for h in tabled.blamed_hosts] == ["gpu17"] and not tabled.exclude_hosts
    merged = verdict(crash + table.format(host="gpu17") + table.format(host="gpu18"), patterns)
    assert merged.failure_class is FailureClass.RANK_KILLED and not merged.blamed_hosts


@pytest.mark.parametrize("improper", [
    "mpirun has exited due to process rank 0 with PID 12205 on\nnode {host} exiting improperly. There "
    "are two reasons this could occur:\n",
    # Open MPI 1.3-1.4's [orterun:proc-exit-no-sync] (help-orterun.txt, SVN r17879 to r22329; heldout496)
    'mpirun has exited due to process rank 0 with PID 12205 on\nnode {host} exiting without calling "finalize". '
    "This may\nhave caused other processes in the application to be\n",
])
def test_a_crash_naming_no_host_is_placed_where_the_launcher_says_the_first_process_ended(
        patterns: PatternSet, improper: str) -> None:
    """The launcher's word of where the first process ended (Open MPI's 'exiting improperly', Flux's exit-timeout)
    places a crash whose own line names no host; alone it is a lead only, and a second host named places nothing."""
    crash = "forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
    placed = verdict(crash + improper.format(host="cn041"), patterns)
    assert placed.failure_class is FailureClass.RANK_KILLED
    assert names(placed.blamed_hosts) == ["cn041"] and not placed.exclude_hosts
    alone = verdict(improper.format(host="cn041"), patterns)
    assert not alone.blamed_hosts
    two = verdict(crash + improper.format(host="cn041") + improper.format(host="cn042"), patterns)
    assert two.failure_class is FailureClass.RANK_KILLED and not two.blamed_hosts
    flux = verdict("37.463s: flux-shell[0]: FATAL: doom: lmp: rank 322 on host lammps-3 exited and "
                   "exit-timeout=30s has expired\nflux-job: task(s) Bus error\n", patterns)
    assert flux.failure_class is FailureClass.RANK_KILLED
    assert names(flux.blamed_hosts) == ["lammps-3"] and not flux.exclude_hosts


@pytest.mark.parametrize("noise", [NO_MODULE_COMMAND, LMOD, IGNORED_IN_DESTRUCTOR, IGNORED_AT_EXIT])
def test_lines_the_run_went_on_after_are_not_the_signature(patterns: PatternSet, noise: str) -> None:
    """Every attempt of a job prints its setup warnings and its ignored exceptions alike: two different failures
    after them keep two signatures (else the second would read as the same failure on healthy hosts, exit 3)."""
    fabric = ("NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4242> with error 12, opcode 0, len 0, "
              "vendor err 129\n")
    oom = "Out of memory: Killed process 4242 (python) total-vm:1234kB\n"
    first, second = (verdict(noise + after, patterns, rc=1) for after in (fabric, oom))
    assert first.signature != second.signature
    assert "nccl.ib_error" in first.signature and "Killed process" in second.signature
    alone = verdict(NO_MODULE_COMMAND, patterns, rc=1)
    assert alone.failure_class is FailureClass.USER_ERROR and "module" in alone.signature


KEEP_ALIVE_WARNING = (
    "W0813 22:23:32.979031 140204091807488 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1267] The node "
    "'gpu07_3411_0' has failed to send a keep-alive heartbeat to the rendezvous '100' due to an error of type "
    "RendezvousConnectionError.\n")
PIP_RETRY_WARNING = (
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken "
    "by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f1c2e0>: Failed to "
    "establish a new connection: [Errno 111] Connection refused')': /simple/torch/\n")


@pytest.mark.parametrize("warning", [KEEP_ALIVE_WARNING, PIP_RETRY_WARNING])
@pytest.mark.parametrize(("after", "rc", "expected"), [
    ("", 1, FailureClass.NETWORK),  # alone, the trouble the log shows is the last word
    ("Out of memory: Killed process 4242 (python) total-vm:1234kB\n", None, FailureClass.OOM),
    ("OSError: [Errno 5] Input/output error\n", 1, FailureClass.TRANSIENT_IO),
    ("srun: error: gpu07: task 3: Segmentation fault (core dumped)\n", 139, FailureClass.RANK_KILLED),
    ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
     "IndexError: list index out of range\n", 1, FailureClass.USER_ERROR),
])
def test_a_network_error_a_client_warned_of_and_went_on_after_does_not_decide(
        patterns: PatternSet, warning: str, after: str, rc: int | None, expected: FailureClass) -> None:
    """torch elastic's background keep-alive warning (printed when the store's node finished first) and pip's retry
    warning are network trouble the program went on after: what ended the run decides, wherever the warning
    stands; alone, the warning is the log's last word."""
    result = verdict(warning + after, patterns, rc=rc)
    assert result.failure_class is expected
    assert verdict(after + warning, patterns, rc=rc).failure_class is expected


def test_a_dead_nodes_warning_still_decides(patterns: PatternSet) -> None:
    """Only network warnings step back: Ray's driver warns that a node was marked dead, and that is the failure."""
    log = ("E0914 16:15:25.711653 1932514 1932528 direct_task_transport.cc:324] Retrying attempt to schedule task at "
           "remote node. Error: IOError: 14: failed to connect to all addresses\n"
           "2020-09-14 16:15:29,466\tWARNING worker.py:1070 -- The node with node id 6363a6c2b3cc8f5f0d3f1d2b3a4b5c6d "
           "has been marked dead because the detector has missed too many heartbeats from it.\n")
    assert verdict(log, patterns, rc=1).failure_class is FailureClass.NODE_LOSS


@pytest.mark.parametrize("line", [
    "ls: cannot access '/scratch/run/checkpoints/*.pt': No such file or directory",
    "rm: cannot remove '/tmp/run.lock': No such file or directory",
    "error: Your local changes to the following files would be overwritten by checkout:",
    "fatal: not a git repository (or any of the parent directories): .git",
    "srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device",
    "slurmstepd: error: couldn't chdir to `/home/user/run': No such file or directory: going to /tmp instead",
])
def test_a_scripts_housekeeping_is_not_the_last_resort(patterns: PatternSet, line: str) -> None:
    """A job script's `ls` of a checkpoint not yet written, `rm` of a lock already gone, or git's refusal before the
    run are checks and cleanup the script goes on after: never why the job stopped. A tool refusing an input
    the job needs still is."""
    assert verdict(f"{line}\nApplication 4221648 exit signals: Killed\n", patterns, rc=1).failure_class \
        is not FailureClass.USER_ERROR
    assert verdict(f"{line}\n", patterns, rc=1).failure_class is FailureClass.UNKNOWN
    needed = "cp: cannot stat 'results/sample1.bam': No such file or directory\n"
    assert verdict(f"{line}\n{needed}", patterns, rc=1).failure_class is FailureClass.USER_ERROR


@pytest.mark.parametrize("noise", [
    "bash: module: line 1: syntax error: unexpected end of file\nbash: error importing function definition for `module'\n",
    "bash: BASH_FUNC_ml(): line 0: syntax error near unexpected token `)'\n",
])
def test_an_environment_function_bash_could_not_import_is_setup(patterns: PatternSet, noise: str) -> None:
    """A login shell's exported `module` function the job's bash could not import is the environment's noise: the
    launch failure after it decides; alone, with the program's own non-zero exit, the setup is the job's."""
    after = ("error: commlib error: got select error (No route to host)\n"
             "error: executing task of job 3031361 failed: failed sending task to execd@r104-n89: can't find "
             "connection\n")
    assert verdict(noise + after, patterns, rc=1).failure_class is FailureClass.NETWORK
    assert verdict(noise, patterns, rc=1).failure_class is FailureClass.USER_ERROR
    assert verdict(noise, patterns, rc=143).failure_class is not FailureClass.USER_ERROR


@pytest.mark.parametrize("line", [
    "ModuleNotFoundError: No module named 'flash_attn'; falling back to eager attention",
    "ValueError: could not decode image shard-00012.jpg, skipping",
    "ImportError: cannot import name 'FusedAdam' from 'apex.optimizers'; continuing without apex",
])
def test_an_error_line_that_says_what_the_program_did_instead_does_not_decide(patterns: PatternSet, line: str) -> None:
    """An error the program reports and goes on after (it falls back, skips, continues without) is not what
    ended the run: the collective's failure after it decides."""
    after = ("[rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with exception: "
             "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, "
             "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.\n")
    assert verdict(f"{line}\n{after}", patterns, rc=1).failure_class is FailureClass.NETWORK


def test_an_exception_that_speaks_of_a_deprecation_still_decides(patterns: PatternSet) -> None:
    """numpy 1.24's removed aliases end a run with an exception that says 'deprecated': it is the run's error."""
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
           "AttributeError: module 'numpy' has no attribute 'float'.\n`np.float` was a deprecated alias for the "
           "builtin `float`. To avoid this error in existing code, use `float` by itself.\n")
    assert verdict(log, patterns, rc=1).failure_class is FailureClass.USER_ERROR


ABORTED = ".command.sh: line 2:    32 Aborted                 (core dumped) stringtie -G ann.gtf in.bam\n"


@pytest.mark.parametrize(("text", "rc", "expected"), [
    # The program says why, then stops itself with abort(): its error decides.
    ("Error: reference annotation file (ann.gtf) not found.\n" + ABORTED, None, FailureClass.USER_ERROR),
    ("Error: reference annotation file (ann.gtf) not found.\n" + ABORTED, 134, FailureClass.USER_ERROR),
    # A workflow engine's summary of the same death above the task's stderr is that abort, not an earlier crash.
    ("Process `quant (s1)` terminated with an error exit status (134)\nCommand error:\n"
     "  Error: reference annotation file (ann.gtf) not found.\n  " + ABORTED, None, FailureClass.USER_ERROR),
    # An abort with no error line before it, another signal, or an error that speaks of the machine: a crash.
    (ABORTED, 134, FailureClass.RANK_KILLED),
    ("Error: reference annotation file (ann.gtf) not found.\n"
     "./run.sh: line 2:    32 Segmentation fault      (core dumped) stringtie\n", None, FailureClass.RANK_KILLED),
    ("Error: device 0 is not available\n" + ABORTED, None, FailureClass.RANK_KILLED),
])
def test_a_programs_error_then_its_own_abort_is_the_programs_stop(
        patterns: PatternSet, text: str, rc: int | None, expected: FailureClass) -> None:
    """A program that prints its own error and then calls abort() stopped itself: its error decides, and the
    SIGABRT (the shell's 'Aborted', exit 134) is how it stopped, not a crash."""
    assert verdict(text, patterns, rc=rc).failure_class is expected


@pytest.mark.parametrize(("first", "then", "want"), [
    # an engine's bkill of the siblings of a job that hit its run limit: the limit decides
    ("Job <1204> is being terminated", "TERM_RUNLIMIT: job killed after reaching LSF run time limit.",
     FailureClass.WALLTIME),
    # Ray Tune's stop handler also takes a site's SIGUSR1 before a time limit: the limit decides
    ("Stop signal received (e.g. via SIGINT/Ctrl+C), ending Ray Tune run.",
     "slurmstepd: error: *** JOB 77 ON n3 CANCELLED AT 2024-01-02T03:04:05 DUE TO TIME LIMIT ***", FailureClass.WALLTIME),
    # Airflow marks the task a success; an out-of-memory kill after it still decides
    ("[2023-01-02 10:00:00] {taskinstance.py:1400} INFO - Marking task as SUCCESS. dag_id=etl, task_id=load",
     "slurmstepd: error: Detected 1 oom_kill event in StepId=5.batch. Some of the step tasks have been OOM Killed.",
     FailureClass.OOM),
])
def test_a_stop_or_success_someone_else_reported_yields_to_a_line_that_says_why(
        first: str, then: str, want: FailureClass, patterns: PatternSet) -> None:
    """bkill's acknowledgement, Ray Tune's stop signal and Airflow's 'Marking task as SUCCESS' sum a run up: any
    other line that says why decides first, wherever it stands; alone, they decide."""
    assert verdict(f"{first}\n{then}\n", patterns).failure_class is want
    alone = verdict(f"{first}\n", patterns).failure_class
    assert alone is not want and alone is not FailureClass.UNKNOWN


def test_a_kubeflow_launchers_succeeded_condition_is_a_summary_that_yields_to_a_line_that_says_why(
        patterns: PatternSet) -> None:
    """A Kubeflow Pipelines launcher's 'has reached the expected condition: Succeeded' sums its TFJob or Katib
    experiment up: alone a success, but a replica's OOMKilled in the same log decides first; 'Failed' is no
    success."""
    done = ("INFO:launch_crd:kubeflow.org/tfjobs mnist in namespace kubeflow has reached the expected "
            "condition: Succeeded.\n")
    alone = verdict(done, patterns)
    assert alone.failure_class is FailureClass.SUCCESS and not alone.retryable, alone.reason
    killed = verdict("mnist-worker-1   0/1     OOMKilled   0          3m\n" + done, patterns)
    assert killed.failure_class is FailureClass.OOM, killed.reason
    failed = verdict(done.replace("Succeeded", "Failed"), patterns)
    assert failed.failure_class is not FailureClass.SUCCESS, failed.reason


@pytest.mark.parametrize("words", [
    "ERROR: memory allocation failed in solver setup",
    "Error: unable to allocate 1073741824 bytes",
    "malloc failed",
    "Insufficient memory to allocate workspace",
])
def test_an_allocation_refused_in_plain_words_is_an_out_of_memory_unless_a_line_says_more(
        words: str, patterns: PatternSet) -> None:
    """Programs with no out-of-memory message of their own say an allocation was refused ('memory allocation failed',
    'unable to allocate N bytes'): alone, an out-of-memory (not the last resort's user error), and it explains a
    crash after it (the pointer the failed allocation returned); a summary, so a node's loss or a time limit in the
    same log decides first."""
    alone = verdict(words + "\n", patterns)
    assert alone.failure_class is FailureClass.OOM and alone.blamed_hosts == (), alone.reason
    crashed = verdict(words + "\nsrun: error: n3: task 0: Segmentation fault (core dumped)\n", patterns)
    assert crashed.failure_class is FailureClass.OOM, crashed.reason
    lost = verdict(words + "\nsrun: error: Node failure on n3\n", patterns)
    assert lost.failure_class is FailureClass.NODE_LOSS and names(lost.blamed_hosts) == ["n3"], lost.reason


@pytest.mark.parametrize(("line", "alone"), [
    ("WARNING: insufficient memory for the cache, using the disk instead", "insufficient memory for the cache"),
    ("malloc failed for the staging buffer; falling back to mmap", "malloc failed for the staging buffer"),
    ("Warning: out of memory for the texture cache, it is skipped", "out of memory for the texture cache"),
])
def test_memory_words_on_a_line_the_program_went_on_after_are_not_why_it_ended(
        line: str, alone: str, patterns: PatternSet) -> None:
    """A warning or a fallback in a program's own memory words: the run went on, so an exit 1 after it is of a cause
    the log does not show (retried), not an out-of-memory (not retried). The same words bare still are one."""
    went_on = verdict(line + "\nstep 100 done\n", patterns, rc=1)
    assert went_on.failure_class is FailureClass.UNKNOWN and went_on.retryable, went_on.reason
    stopped = verdict(alone + "\n", patterns, rc=1)
    assert stopped.failure_class is FailureClass.OOM, stopped.reason


def test_a_build_that_lacks_what_the_job_asks_is_the_users_unless_the_program_went_on(patterns: PatternSet) -> None:
    """'GPU support was not enabled at build time but GPU execution was requested', 'h5py was built without MPI
    support': the same on every node, the user's build (not retried). A warning in the same words that says what the
    program did instead is not why it ended."""
    for line in ("Error: GPU support was not enabled at build time but GPU execution was requested.",
                 "RuntimeError: h5py was built without MPI support, can't use mpio driver"):
        v = verdict(line + "\nx3001c0s19b1n0.hsn.cm.polaris.alcf.anl.gov: rank 0 exited with code 42\n", patterns)
        assert v.failure_class is FailureClass.USER_ERROR and not v.retryable and v.blamed_hosts == (), v.reason
    went_on = verdict("WARNING: this binary was not compiled with CUDA support, running on the CPU instead\n",
                      patterns, rc=1)
    assert went_on.failure_class is FailureClass.UNKNOWN, went_on.reason


def test_open_mpis_missing_executable_is_the_users_and_blames_no_node(patterns: PatternSet) -> None:
    """Open MPI's block after a wrong path or a binary left on one node ('mpirun was unable to launch the specified
    application as it could not access / or execute an executable:', then 'Node: box0101'): the program's own stop,
    and the node it names only reports it."""
    log = ("--------------------------------------------------------------------------\n"
           "mpirun was unable to launch the specified application as it could not access\n"
           "or execute an executable:\n\nExecutable: ./a.out\nNode: box0101\n\n"
           "while attempting to start process rank 17.\n"
           "--------------------------------------------------------------------------\n"
           "17 total processes failed to start\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable, v.reason
    assert v.blamed_hosts == () and v.exclude_hosts == (), v.reason


@pytest.mark.parametrize(("text", "origin"), [
    # ROCr's hang report names no host; Open MPI's handler prints the abort it caused, on its host.
    ("HW Exception by GPU node-1 (Agent handle: 0x1b0fc990) reason :GPU Hang\n"
     "[gpu-07:08475] *** Process received signal ***\n[gpu-07:08475] Signal: Aborted (6)\n", "gpu-07"),
    # A tool typed at a node's own prompt ran there.
    ("root@gpu-24-34:~# nvidia-smi\nUnable to determine the device handle for GPU 0000:03:00.0: GPU is lost. "
     "Reboot the system to recover this GPU\n", "gpu-24-34"),
    # The same at a prompt that shows the host and the directory without the user (PS1='\h:\w\$ ', heldout675).
    ("rig07:~$ nvidia-smi\nUnable to determine the device handle for GPU 0000:01:00.0: GPU is lost.  "
     "Reboot the system to recover this GPU\n", "rig07"),
    ("login01:~/run$ mpirun -np 2 ./solver\nHW Exception by GPU node-1 (Agent handle: 0x1b0fc990) reason :GPU Hang\n",
     None),
    # ... but a launcher typed at a login node's prompt ran the program elsewhere.
    ("[me@login01 run]$ mpirun -np 2 ./solver\nHW Exception by GPU node-1 (Agent handle: 0x1b0fc990) reason :GPU Hang\n",
     None),
    # A second host named: which one's device failed is not said.
    ("HW Exception by GPU node-1 (Agent handle: 0x1b0fc990) reason :GPU Hang\n"
     "[gpu-07:08475] *** Process received signal ***\n[gpu-08:09475] *** Process received signal ***\n", None),
])
def test_a_device_fault_naming_no_host_is_placed_on_the_one_host_the_run_is_tied_to(
        patterns: PatternSet, text: str, origin: str | None) -> None:
    result = verdict(text, patterns)
    assert result.failure_class is FailureClass.GPU_HW
    assert [h.name for h in result.blamed_hosts] == ([origin] if origin else [])
    assert [h.name for h in result.exclude_hosts] == ([origin] if origin else [])


def test_unkillable_step_is_the_nodes_fault_unless_a_time_limit_stopped_the_job_first(patterns: PatternSet) -> None:
    """slurmstepd giving up on a step's processes drains the node ('Kill task failed'): alone it is that node's
    fault; after the job's time limit or a memory kill it is how the stop ended, and that stop stays the class."""
    stuck = "slurmstepd: error: *** JOB 7 STEPD TERMINATED ON n3 AT 2023-01-13T09:58:47 DUE TO JOB NOT ENDING WITH SIGNALS ***\n"
    alone = verdict(stuck, patterns)
    assert alone.failure_class is FailureClass.NODE_LOSS
    assert names(alone.exclude_hosts) == ["n3"]
    timed = verdict("slurmstepd: error: *** JOB 7 ON n3 CANCELLED AT 2023-01-13T09:48:47 DUE TO TIME LIMIT ***\n" + stuck,
                    patterns)
    assert timed.failure_class is FailureClass.WALLTIME
    assert not timed.blamed_hosts
    assert not timed.exclude_hosts
    memory = verdict("slurmstepd: error: Step 7.0 exceeded memory limit (9012345 > 8388608), being killed\n"
                     "slurmstepd: error: *** JOB 7 ON n3 CANCELLED AT 2023-01-13T09:48:47 ***\n" + stuck, patterns)
    assert memory.failure_class is FailureClass.OOM
    assert not memory.exclude_hosts


def test_r_halting_where_a_parallel_worker_was_lost_is_not_the_scripts_error(patterns: PatternSet) -> None:
    """R's 'Error in unserialize(...)' and 'Execution halted' just below the parallel package's word that a worker
    was lost say the session stopped because the worker died (no cause shown: unknown, retryable); a script's own
    error before the lost worker still decides."""
    lost = ("Error in unserialize(socklist[[n]]) : error reading from connection\n"
            "Calls: clusterApply ... FUN -> recvData -> recvData.SOCKnode -> unserialize\n"
            "Execution halted\n")
    worker = verdict(lost, patterns)
    assert worker.failure_class is FailureClass.UNKNOWN and worker.retryable and not worker.blamed_hosts
    own = verdict("Error in log(-1, base = \"x\") : non-numeric argument to mathematical function\n" + lost, patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable


def test_a_programs_stop_words_relaying_the_machines_fault_are_not_the_users_mistake(patterns: PatternSet) -> None:
    """'FATAL ERROR: %s' says the program stopped itself; when the message is the machine's failure (a GPU kernel's
    fault NAMD relays from CUDA, on its line or the line below; a connection that timed out), the stop words do not
    make it the user's mistake. The program's own reasons (a build without the GPU's kernels, a missing input)
    still are."""
    namd = ("FATAL ERROR: CUDA error cudaStreamSynchronize(stream) in file src/CudaTileListKernel.cu, function "
            "buildTileLists, line 1141\n on Pe 4 (nid00012 device 0 pci 0:7:0): {message}\n")
    relayed = verdict(namd.format(message="an illegal memory access was encountered"), patterns, rc=1)
    assert relayed.failure_class is not FailureClass.USER_ERROR and relayed.retryable
    assert not relayed.blamed_hosts
    one_line = verdict("Fatal error: cudaStreamSynchronize failed in cu_blockwait_nb: an illegal memory access was "
                       "encountered\n", patterns, rc=1)
    assert one_line.failure_class is not FailureClass.USER_ERROR and one_line.retryable
    timed_out = verdict("CRITICAL ERROR: Connection timed out while reading x1.40962.grid.nc\n", patterns, rc=1)
    assert timed_out.failure_class is FailureClass.NETWORK
    build = verdict(namd.format(message="no kernel image is available for execution on the device"), patterns, rc=1)
    assert build.failure_class is FailureClass.USER_ERROR
    own = verdict("FATAL ERROR: Unable to access config file /scratch/run/ubq.conf\n", patterns, rc=1)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable


def test_a_host_tag_before_a_programs_error_line_is_not_read_as_the_infrastructure(patterns: PatternSet) -> None:
    """The last resort leaves a program's error line unread when its words speak of the infrastructure ('node',
    'gpu', 'connection'); the host tag a launcher or collector puts before the line ('[node12:34567] ', 'gpu017: ')
    is where it was printed, not what it says."""
    for tag in ("[node12:34567] ", "node12: ", "gpu017: "):
        mistake = verdict(f"{tag}Error: cannot open input file params.yaml\n", patterns, rc=1)
        assert mistake.failure_class is FailureClass.USER_ERROR, tag
    lost = verdict("node12: Error: connection to the license server lost\n", patterns, rc=1)
    assert lost.failure_class is not FailureClass.USER_ERROR


def test_an_oom_a_dask_client_reraised_from_a_worker_is_not_placed_on_the_clients_host(patterns: PatternSet) -> None:
    """A Dask client's Future.result() re-raises the task's exception with the worker's traceback (distributed
    client.py: raise exc.with_traceback(tb)): the worker ran out of memory, not the client's node, which is all the
    client's srun line names (GueroudjiAmal/Xperiment on Irene). Without the re-raising frame the same
    out-of-memory is placed on the one host the log says the job ran on."""
    tail = ("  File \"/opt/venv/lib/python3.9/site-packages/dask/array/core.py\", line 4910, in concatenate3\n"
            "    result = np.empty(shape=shape, dtype=dtype(deepfirst(arrays)))\n"
            "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 16.0 GiB for an array with shape "
            "(16386, 131104) and data type float64\n"
            "srun: error: irene1829: task 0: Exited with exit code 1\n")
    head = ("Traceback (most recent call last):\n"
            "  File \"/scratch/run/ipca.py\", line 41, in <module>\n"
            "    print(explained_variance.result())\n")
    relayed = (head + "  File \"/opt/venv/lib/python3.9/site-packages/distributed/client.py\", line 229, in result\n"
               "    raise exc.with_traceback(tb)\n" + tail)
    v = verdict(relayed, patterns, rc=1)
    assert v.failure_class is FailureClass.OOM and v.blamed_hosts == ()
    v = verdict(head + tail, patterns, rc=1)
    assert v.failure_class is FailureClass.OOM and names(v.blamed_hosts) == ["irene1829"]


def test_a_step_memory_limit_kill_names_the_one_host_srun_reports_killed(patterns: PatternSet) -> None:
    """jobacct_gather's 'Step N exceeded memory limit ..., being killed' names no host, and the step's CANCELLED line
    puts srun's 'H: tasks 0-3: Killed' after the teardown began; that line still says the step's tasks ran on H:
    when H is the one host the log names, the out-of-memory started there. With a second host killed alike,
    nothing says which one ran out."""
    oom = ("slurmstepd: error: Step 14366338.0 exceeded memory limit (8485688 > 8388608), being killed\n"
           "slurmstepd: error: Exceeded job memory limit\n"
           "slurmstepd: error: *** STEP 14366338.0 CANCELLED AT 2015-07-03T13:20:09 *** on c1-014\n"
           "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")
    one = verdict(oom + "srun: error: c1-014: tasks 0-3: Killed\n", patterns)
    assert one.failure_class is FailureClass.OOM and names(one.blamed_hosts) == ["c1-014"]
    two = verdict(oom + "srun: error: c1-014: tasks 0-3: Killed\nsrun: error: c1-015: tasks 4-7: Killed\n", patterns)
    assert two.failure_class is FailureClass.OOM and not two.blamed_hosts


def test_a_transport_librarys_own_log_line_is_never_the_last_resorts_user_error(patterns: PatternSet) -> None:
    """UCX's logger names its source file ('[host:pid:0:tid] rc_verbs_iface.c:63   FATAL: ...'): a transport's own
    error, whatever its message says, so the last resort does not read it as the program's mistake (an underscore
    is no word boundary for 'verbs', 'mlx5', 'uct'). A program's own file that holds such letters inside a longer
    word is still its own."""
    for source in ("rc_verbs_iface.c:63", "ib_mlx5_log.c:174", "uct_iface.c:211"):
        line = f"[r1071:27563:0:27563] {source}   FATAL: qp 0x1f2 entered state 6 on request 42\n"
        assert verdict(line, patterns, rc=1).failure_class is not FailureClass.USER_ERROR, source
    own = verdict("Error: efa_model.pt not found\n", patterns, rc=1)
    assert own.failure_class is FailureClass.USER_ERROR


def test_r_halting_where_clustermq_lost_its_workers_is_not_the_scripts_error(patterns: PatternSet) -> None:
    """clustermq's master stops with 'Trying to receive data without workers' (on the line below R's 'Error in
    self$receive_data(...) : ') when every worker job is gone: the 'Execution halted' after it is the session stopping
    because its workers died (unknown, retryable), not the script's own error; a script's own error still is."""
    lost = ("Running 84 calculations (0 objs/0 Mb common; 1 calls/chunk) ...\n"
            "Error in self$receive_data(timeout, with_checks = with_checks) : \n"
            "  Trying to receive data without workers\n"
            "Calls: Q ... master -> <Anonymous> -> <Anonymous> -> <Anonymous>\n"
            "Execution halted\n")
    workers = verdict(lost, patterns)
    assert workers.failure_class is FailureClass.UNKNOWN and workers.retryable and not workers.blamed_hosts
    own = verdict("Error in read.csv(f) : \n  cannot open the connection\nExecution halted\n", patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable


def test_r_error_whose_wrapped_message_is_a_dropped_connection_is_not_the_scripts_error(patterns: PatternSet) -> None:
    """R ends a long error line at 'Error in <call> : ' and puts the message on the next line: when that message is
    the machine's (libcurl's 'Server returned nothing', the far end dropped the download), the error and the
    'Execution halted' below it only relay it: network, retryable. The script's own message there still is its
    mistake."""
    dropped = ("Downloading GitHub repo Azure/rAzureBatch@master\n"
               "Error in curl::curl_fetch_memory(url, handle = handle) : \n"
               "  Server returned nothing (no headers, no data)\n"
               "Calls: <Anonymous> ... request_fetch -> request_fetch.write_memory -> <Anonymous> -> .Call\n"
               "Execution halted\n")
    net = verdict(dropped, patterns)
    assert net.failure_class is FailureClass.NETWORK and net.retryable and not net.blamed_hosts
    own = verdict("Error in read.csv(f) : \n  cannot open the connection\nExecution halted\n", patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable


def test_r_error_line_just_above_a_lost_worker_is_that_workers_error(patterns: PatternSet) -> None:
    """R breaks 'Error in <call> : ' from a long message and prints the message on the next line (errors.c
    verrorcall_dflt): when that message is a lost worker's (clustermq's 'Socket timeout reached, likely due to a
    worker crash', future's 'Failed to retrieve the value of ClusterFuture ... error reading from connection'), the
    error line above it is the same lost worker (unknown, retryable), not the script's own mistake. A script's own
    error whose message stands on its own line above stays the script's."""
    clustermq = ("Error in master(qsys = workers, iter = df, rettype = rettype, fail_on_error = fail_on_error,  : \n"
                 "  Socket timeout reached, likely due to a worker crash\n"
                 "7: stop(\"Socket timeout reached, likely due to a worker crash\")\n")
    v = verdict(clustermq, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and v.retryable and not v.blamed_hosts
    future = ("Error in mutate_impl(.data, dots) : \n"
              "  Evaluation error: Failed to retrieve the value of ClusterFuture from cluster node #3 (on 'n12').  "
              "The reason reported was 'error reading from connection'.\n")
    assert verdict(future, patterns).failure_class is FailureClass.UNKNOWN
    own = verdict("Error in read.csv(f) : cannot open file 'a.csv'\n"
                  "  Socket timeout reached, likely due to a worker crash\n", patterns)
    assert own.failure_class is FailureClass.USER_ERROR


def test_mpd_every_rank_sigkilled_alike_is_unknown(patterns: PatternSet) -> None:
    """MPD names its console, not the ranks' nodes: every rank it reports SIGKILLed alike says neither who nor why
    (README: every rank killed alike). One rank killed among ranks that exited otherwise stays rank_killed."""
    alike = "".join(f"rank {r} in job 1  niagara1_34383   caused collective abort of all ranks\n"
                    f"  exit status of rank {r}: killed by signal 9 \n" for r in (3, 2, 1, 0))
    v = verdict(alike, patterns)
    assert v.failure_class is FailureClass.UNKNOWN
    assert not v.blamed
    mixed = ("rank 59 in job 1  garl-fire15.local_39996   caused collective abort of all ranks\n"
             "  exit status of rank 59: killed by signal 9\n"
             "rank 58 in job 1  garl-fire15.local_39996   caused collective abort of all ranks\n"
             "  exit status of rank 58: killed by signal 9\n"
             "rank 42 in job 1  garl-fire15.local_39996   caused collective abort of all ranks\n"
             "  exit status of rank 42: return code 1\n")
    assert verdict(mixed, patterns).failure_class is FailureClass.RANK_KILLED
    one = "rank 2 in job 5  fds1_53958   caused collective abort of all ranks\n  exit status of rank 2: killed by signal 9\n"
    assert verdict(one, patterns).failure_class is FailureClass.RANK_KILLED


def test_flux_broker_log_prefix_does_not_hide_a_relayed_crash(patterns: PatternSet) -> None:
    """flux-core#3095: the broker's log prefix ('<time> broker.err[0]: ', src/broker/log.c) before runat's relay of
    the rc1 script's stderr ('rc1.0: ', src/broker/runat.c) still lets tcsh's bare 'Segmentation fault' be read."""
    v = verdict("flux-broker: using singleton\n"
                "2020-07-30T06:37:55.600399Z broker.err[0]: rc1.0: Segmentation fault\n"
                "2020-07-30T06:37:55.600558Z broker.err[0]: rc1.0: _libcver: Undefined variable.\n", patterns)
    assert v.failure_class is FailureClass.RANK_KILLED
    assert v.blamed_hosts == ()


def test_job_script_that_kills_its_own_ranks_is_cancelled(patterns: PatternSet) -> None:
    """copper on Sunspot: the script's set -x trace shows its own pkill, then PALS reports the SIGTERM death."""
    v = verdict("+ mpirun -np 7 -ppn 1 ./copper 1\n+ sleep 80s\n+ pkill -f copper\n"
                f"x1921c0s6b0n0.{SUNSPOT}: rank 2 died from signal 15\n+ date\n", patterns)
    assert v.failure_class is FailureClass.CANCELLED
    assert v.blamed_hosts == () and v.exclude_hosts == ()


def test_traced_kill_explains_neither_a_crash_nor_an_earlier_teardown(patterns: PatternSet) -> None:
    """The traced kill decides only when nothing else does and the teardown comes after it."""
    crash = verdict(f"+ pkill -f monitor\nx1921c0s6b0n0.{SUNSPOT}: rank 2 died from signal 11\n"
                    f"x1921c0s4b0n0.{SUNSPOT}: rank 1 died from signal 15\n", patterns)
    assert crash.failure_class is FailureClass.RANK_KILLED
    before = verdict(f"x1921c0s4b0n0.{SUNSPOT}: rank 1 died from signal 15\n+ pkill -f monitor\n", patterns)
    assert before.failure_class is FailureClass.UNKNOWN


def test_a_ci_runners_cancellation_after_the_killed_ranks_explains_them(patterns: PatternSet) -> None:
    """Trixi.jl#1461: the GitHub Actions runner signals the step's processes when the job is cancelled and logs
    'The operation was canceled.' once the step has ended, so hydra's SIGKILL banner above that line is the
    cancellation's teardown and its host no origin; without the runner's line the SIGKILL decides."""
    killed = ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
              "=   PID 3335 RUNNING AT fv-az444-724\n"
              "=   EXIT CODE: 9\n"
              "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")
    cancel = "Error: The operation was canceled.\n"
    v = verdict(killed + cancel, patterns)
    assert v.failure_class is FailureClass.CANCELLED
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert verdict(killed, patterns).failure_class is FailureClass.RANK_KILLED


def test_hydra_bootstrap_failure_relaying_ssh_usage_is_the_launchs_own_mistake(patterns: PatternSet) -> None:
    """jtipton2/LinuxHPC (heldout206): Intel MPI's 'Unable to run bstrap_proxy on X' alone is a lead (network);
    ssh's own usage text relayed below its 'Possible reasons' block says the launcher handed ssh a bad option:
    user_error, and the host it names is not blamed."""
    head = ("[mpiexec@n1] Error: Unable to run bstrap_proxy on cnode003 (pid 526696, exit code 65280)\n"
            + "".join(f"[mpiexec@n1] reason line {i}\n" for i in range(12)))
    alone = verdict(head, patterns, rc=255)
    assert alone.failure_class is FailureClass.NETWORK
    v = verdict(head + "unknown option -- -\nusage: ssh [-46AaCfGgKkMNnqsTtVvXxYy] [-B bind_interface]\n",
                patterns, rc=255)
    assert v.failure_class is FailureClass.USER_ERROR
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert not v.retryable


def test_pbs_epilogue_walltime_used_at_its_request_is_walltime(patterns: PatternSet) -> None:
    """The PBS Pro epilogue (EPCC ARCHER): used walltime past the walltime requested, no other line: the limit
    ended it. Under the request it says nothing (the job stopped on its own)."""
    epilogue = (
        "Resources requested: ncpus=24,place=free,walltime=00:05:00\n"
        "Resources allocated: cpupercent=0,cput=00:00:00,mem=37848kb,ncpus=24,vmem=510000kb,walltime={used}\n"
        "*** someone   Job: 397462.sdb   ended: 11/07/14 17:04:01   queue: standard ***\n"
    )
    v = verdict(epilogue.format(used="00:05:03"), patterns)
    assert v.failure_class is FailureClass.WALLTIME
    assert v.blamed_hosts == () and not v.retryable
    assert verdict(epilogue.format(used="00:00:07"), patterns).failure_class is FailureClass.UNKNOWN


def test_r_halting_with_no_error_line_is_an_interrupt_not_the_scripts_error(patterns: PatternSet) -> None:
    """R prints its error's message before 'Execution halted'; an interrupt (SIGINT: a Ctrl-C, a scheduler's first
    kill signal) prints only the deferred warnings and the halt (src/main/errors.c onintrEx). A bare halt with no
    error line above it, its socket workers then losing their connection, is not the script's own error (cause not
    shown: unknown, retryable); with an error line ('Error: ...', 'Error in f(x) :') above it, it still is, and so
    is a bare halt alone (an error line no pattern reads may stand above it)."""
    lost = ("Error in unserialize(node$con) : error reading from connection\n"
            "Calls: <Anonymous> ... doTryCatch -> recvData -> recvData.SOCKnode -> unserialize\n"
            "Execution halted\n")
    halted = verdict("Warning message:\n'isSpike' is deprecated.\nSee help(\"Deprecated\") \nExecution halted\n" + lost,
                     patterns)
    assert halted.failure_class is FailureClass.UNKNOWN and halted.retryable and not halted.blamed_hosts
    unread = verdict("Error in if (attr(r, \"status\") != 0) { : argument is of length zero\nExecution halted\n", patterns)
    assert unread.failure_class is FailureClass.USER_ERROR
    own = verdict("Error: object 'x' not found\nExecution halted\n", patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable
    call = verdict("Error in library(foo) : there is no package called 'foo'\nExecution halted\n", patterns)
    assert call.failure_class is FailureClass.USER_ERROR


def test_a_containers_exit_code_137_in_docker_inspect_is_a_sigkill_unless_oomkilled(patterns: PatternSet) -> None:
    """docker inspect's State "ExitCode": 137 says the container was SIGKILLed (rank_killed); with "OOMKilled": true
    beside it the OOM decides."""
    state = '    "State": {{\n        "OOMKilled": {oom},\n        "ExitCode": 137,\n    }},\n'
    killed = verdict(state.format(oom="false"), patterns)
    assert killed.failure_class is FailureClass.RANK_KILLED
    oom = verdict(state.format(oom="true"), patterns)
    assert oom.failure_class is FailureClass.OOM


def test_node_declared_dead_after_the_users_own_kill_is_a_cancellation(patterns: PatternSet) -> None:
    """flux-core PR 7145: the user kills a broker by PID at the prompt, then the leader says that node is dead to
    Flux. The node loss is the user's own doing (cancelled, nobody blamed); without the kill it is a node loss,
    and a node lost before the kill still is."""
    dead = "Oct 13 14:34:33.285216 PDT 2025 broker.err[0]: dead to Flux: system76-pc (rank 15)\n"
    kill = "ƒ(s=16,d=0,builddir) $ kill -15 3948062\n"
    v = verdict(kill + dead + "flux-start: Exit timeout: killed rank 0-14\n", patterns)
    assert v.failure_class is FailureClass.CANCELLED
    assert not v.blamed_hosts and not v.exclude_hosts
    assert not v.retryable
    lost = verdict(dead, patterns)
    assert lost.failure_class is FailureClass.NODE_LOSS and names(lost.blamed_hosts) == ["system76-pc"]
    before = verdict(dead + kill, patterns)
    assert before.failure_class is FailureClass.NODE_LOSS and names(before.blamed_hosts) == ["system76-pc"]


@pytest.mark.parametrize("last", [
    "STOP: FDS completed successfully (CHID: Test_Edev_case1)",
    " Normal termination of Gaussian 16 at Tue Mar  5 10:11:12 2024.",
    "Training completed",
    "  **** **  *******  **  PROGRAM STOPPED IN /hppfs/scratch/04/di38fab/04_TMD/5_Bi",
    "FORTRAN STOP",
])
def test_a_programs_last_word_that_it_finished_is_a_success_when_no_status_is_known(
        patterns: PatternSet, last: str) -> None:
    """A posted log often has no exit status: the program's own word that it finished, at the log's end, with no
    failure line anywhere, says the run succeeded (a job killed before it could say why ends otherwise)."""
    v = verdict(f"step 1 loss 2.0\nWARNING: deprecated option -x\nstep 2 loss 1.0\n{last}\n", patterns)
    assert v.failure_class is FailureClass.SUCCESS and not v.retryable and not v.blamed_hosts, v.reason


@pytest.mark.parametrize(("text", "rc"), [
    # an exit status is known: it decides
    ("step 1\nSimulation finished successfully\n", 1),
    # the words take it back
    ("Job 0 completed successfully, but some output files are missing.\n", None),
    ("task completed normally with an exit code of 1; initiating job cleanup\n", None),
    # Cobalt prints its end line whatever the task's status: an exit code of None says no success (heldout123), and
    # each of the job's logs repeats it to the log's end
    ("Info: task completed normally with an exit code of None; initiating job cleanup and removal\n" * 3, None),
    ("[host:1] Abort before MPI_INIT completed successfully; not able to guarantee that all other\n", None),
    # a failure line before it (a crash the launcher tore the step down after) or after it
    ("srun: error: cas643: task 1: Floating point exception\nsrun: Terminating job step 9600744.0\n"
     "Execution finished\n", None),
    ("Simulation finished successfully\nTraceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n"
     "IndexError: list index out of range\n", None),
    # not the log's last word: the log went on
    ("Stage 1 completed successfully\nstep 1\nstep 2\nstep 3\nstep 4\n", None),
])
def test_a_finished_line_is_no_success_where_anything_says_otherwise(
        patterns: PatternSet, text: str, rc: int | None) -> None:
    v = verdict(text, patterns, rc=rc)
    assert v.failure_class is not FailureClass.SUCCESS, v.reason


@pytest.mark.parametrize("term", [
    "signal (15): Terminated\nin expression starting at /home/runner/work/pkg/test/runtests.jl:9\n",
    "srun: error: n3: task 2: Terminated\n",
])
def test_a_sigkill_after_the_processes_reported_sigterm_is_the_stops_second_step(
        patterns: PatternSet, term: str) -> None:
    """SIGTERM first, then SIGKILL for what is left: Hydra's 'EXIT CODE: 9' banner after the ranks reported the
    SIGTERM blames no host (every process got the same stop); a SIGKILL reported before any SIGTERM still does."""
    banner = "=   PID 3345 RUNNING AT n2\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n"
    v = verdict(f"step 10\n{term}\n{banner}", patterns)
    assert v.failure_class is not FailureClass.RANK_KILLED and not v.blamed_hosts, v.reason
    first = verdict(f"step 10\n{banner}{term}", patterns)
    assert first.failure_class is FailureClass.RANK_KILLED and [h.name for h in first.blamed_hosts] == ["n2"]


def test_a_finished_word_every_rank_prints_is_read_at_its_last_line(patterns: PatternSet) -> None:
    """Each of a job's ranks prints its own 'FORTRAN STOP' (64 QE ranks under nvfortran, heldout252): the scanner
    keeps one record, and the finished rule reads its last line, not its first."""
    log = "".join("Warning: ieee_underflow is signaling\nWarning: ieee_inexact is signaling\nFORTRAN STOP\n"
                  for _ in range(8))
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.SUCCESS, v.reason
    went_on = verdict(log + "step 1\nstep 2\nstep 3\nstep 4\n", patterns)
    assert went_on.failure_class is not FailureClass.SUCCESS, went_on.reason


def test_a_finished_word_before_the_shells_time_report_is_still_the_programs_last_word(patterns: PatternSet) -> None:
    """A batch script's 'time srun gmx_mpi mdrun' (heldout293): GROMACS's parting quote, then bash's time report
    ('\\nreal\\t...\\nuser\\t...\\nsys\\t...'). The report closes the log after the program ended, so the quote
    is still its last word; lines of the program after it are not."""
    log = ("Performance:        5.223        4.595\n\n"
           "GROMACS reminds you: \"The researcher's art is first of all to find himself a good boss.\" (Andre Lwoff)\n"
           "\n\nreal\t5m42.631s\nuser\t0m0.030s\nsys\t0m0.056s\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.SUCCESS, v.reason
    went_on = log.replace("\n\nreal", "\nstep 1\nstep 2\nreal")
    assert verdict(went_on, patterns).failure_class is not FailureClass.SUCCESS
    assert verdict(log.replace("real\t", "unreal\t"), patterns).failure_class is not FailureClass.SUCCESS


def test_a_solvers_unconverged_words_before_the_programs_finished_line_are_a_warning_it_went_on_after(
        patterns: PatternSet) -> None:
    """Quantum ESPRESSO prints 'c_bands:  N eigenvalues not converged' on an SCF step and still ends by its normal
    path ('JOB DONE.', heldout252): the words before the finished line do not make the run the numerics' user_error."""
    log = ("     c_bands:  2 eigenvalues not converged\n     total energy = -5049.52 Ry\n"
           "     PWSCF        :     36.11s CPU     55.03s WALL\n"
           "=------------------------------------------------------------------------------=\n"
           "   JOB DONE.\n"
           "=------------------------------------------------------------------------------=\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.SUCCESS and not v.blamed_hosts, v.reason
    # an exit status decides; words after the finished line, or alone, are still the numerics' stop
    assert verdict(log, patterns, rc=1).failure_class is not FailureClass.SUCCESS
    after = verdict("   JOB DONE.\n SCF has not converged.  Exiting.\n", patterns)
    assert after.failure_class is FailureClass.USER_ERROR, after.reason
    alone = verdict("     c_bands:  2 eigenvalues not converged\n     total energy = -5049.52 Ry\n", patterns)
    assert alone.failure_class is FailureClass.USER_ERROR, alone.reason


def test_a_flux_eventlogs_complete_status_zero_is_a_summary_that_yields_to_a_line_that_says_why(
        patterns: PatternSet) -> None:
    """Flux's exec eventlog dumped as JSON ends a job that exited 0 with '"name":"complete","context":{"status":0}'
    (job-exec's jobinfo_complete): a success alone, but a log may dump many jobs' eventlogs, so a line that says
    why another job failed decides first (heldout266)."""
    done = ('{"timestamp":1745004995.5149474,"name":"shell.task-exit","context":{"localid":49,"rank":49,'
            '"state":"Exited","pid":63448,"wait_status":0,"signaled":0,"exitcode":0}}\n'
            '{"timestamp":1745004995.6357906,"name":"complete","context":{"status":0}}\n'
            '{"timestamp":1745004995.6358213,"name":"done"}\n')
    assert verdict(done, patterns).failure_class is FailureClass.SUCCESS
    failed = verdict("0.5s: flux-shell[0]: FATAL: task 0 (host n1): start failed: a.out: No such file or directory\n"
                     "flux-job: task(s) exited with exit code 127\n" + done, patterns)
    assert failed.failure_class is FailureClass.USER_ERROR


def test_a_batch_systems_exit_status_zero_is_a_summary_unless_a_line_reports_a_non_zero_exit(
        patterns: PatternSet) -> None:
    """OpenPBS's 'Exit_status=0' (qstat -f, the end mail), a site epilogue's 'Exit Status: 0' and Grid Engine's
    completion mail say the job's script exited 0: a success alone (heldout13, heldout156, heldout173); a line
    that says why decides first, and one that reports a non-zero exit in words ('finished with 143') says the script was a
    wrapper that caught its program's failure (pbs_heldout50), so nothing is said to have succeeded."""
    report = ("Job Id: 1663177[40].pbsserver for user u in queue small\n"
              "Exit Status: 0\n"
              "Walltime requested:   16:00:00 :      Walltime used:   02:19:05\n")
    assert verdict(report, patterns).failure_class is FailureClass.SUCCESS
    assert verdict("    Exit_status = 0\n", patterns).failure_class is FailureClass.SUCCESS
    wrapped = verdict("[auto-retry] FAILOVER STOP: exhausted (no spare nodes left, rc=143)\n"
                      "Execution finished with 143.\njob_state = F\nExit_status = 0\n", patterns)
    assert wrapped.failure_class is FailureClass.UNKNOWN
    why = verdict("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"
                  "KeyError: 'lr'\n" + report, patterns)
    assert why.failure_class is FailureClass.USER_ERROR
    assert verdict("   Exit Status:        271 (Linux Signal 15 SIGTERM Termination)\n",
                   patterns).failure_class is not FailureClass.SUCCESS


def test_hydras_banner_host_places_a_crash_that_names_none_unless_it_was_killed_in_the_clean_up(
        patterns: PatternSet) -> None:
    """Hydra's BAD TERMINATION banner names the host of the first process that ended badly: a crash line with no
    host is placed there when the log names no other (heldout273); when the banner's EXIT CODE is 9 the process was
    killed by the clean-up, which says nothing of where the crash was, and nobody is blamed."""
    def log(code: int) -> str:
        return ("forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
                "===================================================================================\n"
                "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                "=   PID 4242 RUNNING AT calcvm\n"
                f"=   EXIT CODE: {code}\n"
                "=   CLEANING UP REMAINING PROCESSES\n")
    crash = verdict(log(174), patterns)
    assert crash.failure_class is FailureClass.RANK_KILLED
    assert crash.blamed_hosts == (Host("calcvm"),)
    killed = verdict(log(9), patterns)
    assert killed.blamed_hosts == ()


def test_an_intel_fortran_crash_is_placed_by_the_first_task_exit_carrying_its_error_number(
        patterns: PatternSet) -> None:
    """Intel Fortran's runtime exits with its error's number ('forrtl: severe (174)' exits 174): in a multi-node
    srun log, a crash line naming no host is placed on the host srun reports first ending with that code
    (heldout275); a first report with another code says nothing of the crash, and nobody is blamed."""
    def log(first: int) -> str:
        return ("forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
                f"srun: error: nid00626: task 97: Exited with exit code {first}\n"
                "srun: error: nid00627: task 120: Exited with exit code 174\n")
    placed = verdict(log(174), patterns)
    assert placed.failure_class is FailureClass.RANK_KILLED
    assert placed.blamed_hosts == (Host("nid00626"),)
    assert verdict(log(1), patterns).blamed_hosts == ()


def test_a_full_disk_met_by_the_gpu_core_dump_writer_is_not_the_jobs_storage_fault(patterns: PatternSet) -> None:
    """After a GPU fault ROCr dumps the GPU's state and, when posix_fallocate refuses the space, prints 'Failed to
    allocate file: No space left on device' (heldout280): that ENOSPC lost only the dump, so the run is not a
    storage fault; the same ENOSPC on the program's own write is."""
    dump = verdict("Memory access fault by GPU node-4 (Agent handle: 0x55d) on address 0x7f. Reason: Unknown.\n"
                   "Failed to allocate file: No space left on device\nGPU core dump failed\n", patterns)
    assert dump.failure_class is not FailureClass.TRANSIENT_IO
    write = verdict("OSError: [Errno 28] No space left on device: '/scratch/ckpt/step_100.pt'\n", patterns)
    assert write.failure_class is FailureClass.TRANSIENT_IO


def test_enospc_on_a_cgroupfs_write_is_not_a_full_disk(patterns: PatternSet) -> None:
    """Slurm's cgroup plugin's 'write value ... to '/sys/fs/cgroup/...' failed: No space left on device' is the
    kernel's answer for a cpuset with no CPUs (heldout632), not a full file system."""
    cg = verdict("slurmstepd: error: common_file_write_uints: write value '39981' to "
                 "'/sys/fs/cgroup/cpuset/slurm/uid_20006/job_6457/step_batch/cgroup.procs' failed: "
                 "No space left on device\n"
                 "slurmstepd: error: job_manager: exiting abnormally: Slurmd could not execve job\n", patterns)
    assert cg.failure_class is not FailureClass.TRANSIENT_IO
    disk = verdict("cp: error writing 'out/shard-3': No space left on device\n", patterns)
    assert disk.failure_class is FailureClass.TRANSIENT_IO


def test_a_submission_refusal_logged_as_a_warning_still_says_why(patterns: PatternSet) -> None:
    """Autosubmit logs sbatch's stderr at its warning level (heldout632): the refusal, the only word on why, decides
    once nothing else does."""
    got = verdict("[WARNING] 2020-12-09 18:35:49,164 Command sbatch -D /x /x/a.cmd in mn-bsc32 warning: sbatch: "
                  "error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's "
                  "size and/or time limits)\n[ERROR] 2020-12-09 18:35:49,165 marenostrum4 submission failed\n",
                  patterns)
    assert got.failure_class is FailureClass.USER_ERROR
    assert got.blamed_hosts == ()


def test_flux_mpi_abort_made_by_mpichs_fatal_handler_yields_to_the_stack(patterns: PatternSet) -> None:
    """Flux's 'MPI_Abort: ...' exception beside MPICH's fatal-error header is the library's abort: the error stack's
    own line decides (an OFI poll that failed is the network); without the header it is the program's own stop."""
    abort = "100.332s: job.exception type=exec severity=0 MPI_Abort: aborted\n"
    header = ("Abort(337818511) on node 141 (rank 141 in comm 0): Fatal error in PMPI_Wait: Unknown error class, "
              "error stack:\n")
    ofi = ("MPIDI_OFI_handle_cq_error(1133): OFI poll failed (ofi_events.c:1133:MPIDI_OFI_handle_cq_error:"
           "Transport endpoint is not connected)\n")
    assert verdict(abort + header + ofi, patterns).failure_class is FailureClass.NETWORK
    assert verdict(abort + ofi, patterns).failure_class is FailureClass.USER_ERROR


def test_a_workflow_engines_restated_context_gone_exception_is_not_the_programs_own_stop(
        patterns: PatternSet) -> None:
    """Nextflow's debug log restates a task's exception as '  error [<class>]: <message>' (TaskProcessor.resumeOrDie);
    its singularity cache throws IllegalStateException for a failed pull (heldout300). Such a context-gone type is
    not read by the last resort; a type of the program's own still is."""
    def log(kind: str) -> str:
        return ("Jul-14 14:03:15.797 [Actor Thread 11] DEBUG nextflow.processor.TaskProcessor - Handling unexpected "
                "condition for\n  task: name=QUANT (2); work-dir=null\n"
                f"  error [{kind}]: {kind}: Failed to pull singularity image\n")
    assert verdict(log("java.lang.IllegalStateException"), patterns).failure_class is FailureClass.UNKNOWN
    assert verdict(log("nextflow.exception.ProcessUnrecoverableException"),
                   patterns).failure_class is FailureClass.USER_ERROR


def test_an_assertion_in_hydras_own_proxy_is_no_ranks_crash(patterns: PatternSet) -> None:
    """glibc's assert() names the program that failed it: Hydra's proxy or mpiexec failing one of its own asserts is
    the launcher's bug, not a rank's SIGABRT (heldout315); the same assertion in the user's program still is."""
    proxy = verdict("hydra_pmi_proxy: src/pmi_wire.c:683: PMIU_cmd_output_v1: Assertion `!PMIU_cmd_is_static(pmicmd)' "
                    "failed.\n[mpiexec@n01] control_cb (mpiexec/pmiserv_cb.c:280): assert (!closed) failed\n", patterns)
    assert proxy.failure_class is not FailureClass.RANK_KILLED
    program = verdict("solver: src/grid.c:88: refine: Assertion `n > 0' failed.\n", patterns)
    assert program.failure_class is FailureClass.RANK_KILLED


def test_a_broken_grid_engine_stream_gives_way_to_the_daemon_open_mpi_lost(patterns: PatternSet) -> None:
    """qrsh's stream to the remote shepherd closing ('commlib error: got read error', naming no host) and, just below,
    ORTE's word that it lost its daemon on a node are one loss seen twice: the launcher's report decides, node_loss
    (heldout311); the broken stream alone is a network error."""
    stream = 'error: commlib error: got read error (closing "n17/shepherd_ijs/1")\n'
    lost = ("--------------------------------------------------------------------------\n"
            "ORTE has lost communication with its daemon located on node:\n\n  hostname:  n17\n\n"
            "This is usually due to either a failure of the TCP network\n")
    assert verdict(stream + lost, patterns).failure_class is FailureClass.NODE_LOSS
    assert verdict(stream, patterns).failure_class is FailureClass.NETWORK


def test_mpichs_cpi_result_is_a_finish_despite_its_error_word(patterns: PatternSet) -> None:
    """cpi's last word 'pi is approximately ..., Error is ...' names the numerical error of its result, not a
    failure: as the log's last line it is the program's finish (heldout315); with lines after it, it decides nothing."""
    run = "Process 0 of 2 is on n1\nProcess 1 of 2 is on n2\n"
    done = "pi is approximately 3.1415926544231318, Error is 0.0000000008333387\n"
    assert verdict(run + done, patterns).failure_class is FailureClass.SUCCESS
    assert verdict(run + done + "step\n" * 4, patterns).failure_class is not FailureClass.SUCCESS


def test_a_servers_startup_line_does_not_hide_the_kill_after_it(patterns: PatternSet) -> None:
    """uvicorn's 'Application startup complete.' says a model server came up (heldout306): alone, the run is a
    success; a kill after it decides (a one-line summary, classify._STATUS_ONLY)."""
    up = "INFO:     Started server process [4242]\nINFO:     Application startup complete.\n"
    assert verdict(up, patterns).failure_class is FailureClass.SUCCESS
    killed = verdict(up + "/var/spool/slurmd/job77/slurm_script: line 12: 4242 Killed                  python serve.py\n",
                     patterns)
    assert killed.failure_class is FailureClass.RANK_KILLED


def test_a_node_the_cloud_refused_over_quota_is_never_blamed_for_the_requeue(patterns: PatternSet) -> None:
    """slurm-gcp's resume program sets a node DOWN with the cloud's quota refusal, and slurmctld requeues the job 'due
    to failure of node' X, then X 'not resumed by ResumeTimeout' (heldout317): X never ran, so the job's own request is
    at fault (user_error) and X is not blamed; the same lines without the refusal are a node lost."""
    refusal = ("[2024-11-06T11:23:46.199] update_node: node c4-1 reason set to: GCP Error: Quota CPUS_PER_VM_FAMILY "
               "exceeded. Limit: 12.0 in region europe-west4.\n")
    requeue = ("[2024-11-06T11:23:46.199] requeue job JobId=2 due to failure of node c4-1\n"
               "[2024-11-06T11:23:46.199] update_node: node c4-1 state set to DOWN\n"
               "[2024-11-06T11:28:45.594] node c4-1 not resumed by ResumeTimeout(300), setting DOWN and POWERED_DOWN\n")
    refused = verdict(refusal + requeue, patterns)
    assert refused.failure_class is FailureClass.USER_ERROR
    assert names(refused.blamed_hosts) == []
    lost = verdict(requeue, patterns)
    assert lost.failure_class is FailureClass.NODE_LOSS
    assert names(lost.blamed_hosts) == ["c4-1"]


@pytest.mark.parametrize("prefix", ["", "2024-05-01T12:00:00.1234567Z ", "[2024-05-01 12:00:00.123] ",
                                    "May 01 12:00:00 login1 job[4242]: ", "[pod/trainer-0/main] ", "> > ", "    "])
def test_rules_on_how_a_line_opens_hold_behind_a_collectors_prefix(patterns: PatternSet, prefix: str) -> None:
    """A log that came through a CI runner, kubectl, journald or a mail reply has a stamp or a tag before every
    line; the rules keyed on how a line opens read past it as the packs' '^' does: a script's rm of a file already
    gone is housekeeping (the traced pkill and the teardown after it decide), the shell's 'Killed' is a rank's
    SIGKILL, NWChem's allocator out of room is oom."""
    def stamped(text: str) -> str:
        return "".join(prefix + line + "\n" for line in text.splitlines())
    own_kill = verdict(stamped("+ mpirun -np 7 -ppn 1 ./copper 1\nrm: cannot remove 'book.txt': No such file or "
                               f"directory\n+ pkill -f copper\nx1921c0s6b0n0.{SUNSPOT}: rank 2 died from signal 15"),
                       patterns)
    assert own_kill.failure_class is FailureClass.CANCELLED, own_kill.reason
    killed = verdict(stamped("Loading model...\nKilled"), patterns)
    assert killed.failure_class is FailureClass.RANK_KILLED, killed.reason
    nwchem = verdict(stamped(" movecs_write: ma failed               17920\n"
                             "application called MPI_Abort(comm=0x84000007, 17920) - process 0"), patterns)
    assert nwchem.failure_class is FailureClass.OOM, nwchem.reason


def test_a_times_last_digits_are_no_rank(patterns: PatternSet) -> None:
    """srun -l's '7: ' names a rank; the same digits ending a time of day ('16:19:17.812101: E ...', TensorFlow's
    log stamp) do not, behind a timestamp or not."""
    assert _RANK_PREFIX.match("2023-11-01 16:19:17.812101: E tensorflow/x.cc:606] failed to allocate") is None
    assert _RANK_PREFIX.match("  7: RuntimeError: boom").group(2) == "7"
    assert _RANK_PREFIX.match("2024-05-01T12:00:00.1234567Z [rank3]: RuntimeError: boom").group(1) == "3"


def test_apruns_usage_line_without_an_exit_summary_is_a_finished_run(patterns: PatternSet) -> None:
    """aprun prints 'Application N resources: ...' at every application's end and, for a failed one, its exit
    summary just before it: the usage line closing a log with no summary and no failure is every PE's status 0
    (heldout321); with the summary it is not, and with program output after it, it is not the log's last word."""
    hello = "".join(f"Hello world from processor nid0002{r // 4}, rank {r} out of 8 processors\n" for r in range(8))
    usage = "Application 26449405 resources: utime ~14s, stime ~8s, Rss ~39392, inblocks ~83290, outblocks ~0\n"
    assert verdict(hello + usage, patterns).failure_class is FailureClass.SUCCESS
    failed = verdict(hello + "Application 26449405 exit codes: 1\n" + usage, patterns)
    assert failed.failure_class is not FailureClass.SUCCESS
    assert verdict(usage + hello, patterns).failure_class is not FailureClass.SUCCESS


def test_a_fabric_notice_gives_way_to_the_crash_after_it(patterns: PatternSet) -> None:
    """Open MPI's OFI MTL help block says a libfabric call failed and the job 'may behave unpredictably (and/or
    abort) after this': alone it is the network's failure; a rank's own segfault after it is how the job ended,
    and the crash decides (heldout322's _ABORT_MAY_FOLLOW)."""
    notice = ("Open MPI failed an OFI Libfabric library call (fi_domain).  This is highly\n"
              "unusual; your job may behave unpredictably (and/or abort) after this.\n\n"
              "  Local host: crusher051\n  Error: Function not implemented (38)\n")
    assert verdict(notice, patterns).failure_class is FailureClass.NETWORK
    crash = notice + "[crusher051:12345] *** Process received signal ***\n[crusher051:12345] Signal: Segmentation fault (11)\n"
    assert verdict(crash, patterns).failure_class is FailureClass.RANK_KILLED


def test_memory_words_a_programs_own_pattern_reads_otherwise_are_no_oom(patterns: PatternSet) -> None:
    """MSCCL++ prints an InfiniBand completion status through strerror ('status 12 (Ib failure: Cannot allocate
    memory)'): its pack reads the line as the network's failure, so the generic memory words on the same line are not
    quoted as the cause (heldout337); a plain allocation failure below a network error still is."""
    ib = ("terminate called after throwing an instance of 'mscclpp::IbError'\n"
          "  what():  a work item failed: status 12 (Ib failure: Cannot allocate memory)\n")
    assert verdict(ib, patterns).failure_class is FailureClass.NETWORK


def test_a_program_that_finished_after_its_scripts_typo_is_a_success(patterns: PatternSet) -> None:
    """bash goes on after a command it cannot run: a program's own finished line after the script's 'command not
    found', at the log's end with no exit status, is a success (heldout321); a script's own closing echo after the
    typo is not the program's word, and the typo decides."""
    typo = "/var/spool/slurmd/job163982/slurm_script: line 19: surce: command not found\n"
    charm = "Charm++> Running on 12 hosts\nStep 100 done\n[Partition 0][Node 0] End of program\n"
    assert verdict(typo + charm, patterns).failure_class is FailureClass.SUCCESS
    assert verdict(typo + "Job finished\n", patterns).failure_class is FailureClass.USER_ERROR


def test_a_hip_runtime_error_is_the_gpu_runtimes_not_the_programs(patterns: PatternSet) -> None:
    """PyTorch's ROCm build says 'HIP error: <message>' where its CUDA build says 'CUDA error: ...': a traceback
    ending so is the GPU runtime's report, not a programming error the last resort would read (heldout331)."""
    tb = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
          "    vals = torch.masked_select(x, x > 0)\n"
          "RuntimeError: HIP error: the operation cannot be performed in the present state\n")
    assert verdict(tb, patterns).failure_class is not FailureClass.USER_ERROR


def test_a_guess_of_user_error_never_overrules_an_error_line_held_back_as_the_infrastructures(
        patterns: PatternSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the word counts say (here a guess forced to user_error at p=0.99, so the test does not hang on the
    shipped counts): a bare log whose error line the last resort held back because it speaks of the infrastructure
    (a GPU runtime's report) stays unknown and retryable; a bare log with no such line still takes the guess."""
    forced = wordguess.Guess(FailureClass.USER_ERROR, 0.99, ("cannot",), 10)
    monkeypatch.setattr(wordguess, "guess", lambda sample, threshold=wordguess.THRESHOLD: forced)
    hip = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
           "RuntimeError: HIP error: the operation cannot be performed in the present state\n")
    held = verdict(hip, patterns)
    assert held.failure_class is FailureClass.UNKNOWN and held.retryable
    assert verdict("step 1\nstep 2\ncannot go on\n", patterns).failure_class is FailureClass.USER_ERROR


def test_custodian_that_corrected_a_failure_and_ran_on_is_a_success(patterns: PatternSet) -> None:
    """custodian starts another attempt only after its handlers corrected the error: a failure before the last
    'Starting job no. N (...) attempt no. M.' and its closing 'Run completed' at the log's end is a success
    (heldout342); a failure after the last start, or its words for giving up, keep the failure."""
    first = "INFO:custodian.custodian:Starting job no. 1 (QCJob) attempt no. 1. Errors thus far = 0.\n"
    crash = "srun: error: nid04298: task 0: Aborted\n"
    again = "INFO:custodian.custodian:Starting job no. 1 (QCJob) attempt no. 2. Errors thus far = 1.\n"
    done = "INFO:custodian.custodian:Run completed. Total time taken = 0:41:07.\n"
    assert verdict(first + crash + again + done, patterns).failure_class is FailureClass.SUCCESS
    assert verdict(first + again + crash + done, patterns).failure_class is not FailureClass.SUCCESS
    gave_up = "ERROR:custodian.custodian:Unrecoverable error for handler: QChemErrorHandler\n"
    assert verdict(first + crash + again + gave_up + done, patterns).failure_class is not FailureClass.SUCCESS


def test_custodian_that_met_no_failure_and_ended_its_run_is_a_success(patterns: PatternSet) -> None:
    """custodian's closing 'Run completed' comes in a finally block, after an error too; with no failure line, none
    of its words for giving up and nothing after it, every job ran and passed its checks (heldout588). A traceback
    after the closing line, or its giving-up words before it, keep it from a success."""
    warn = "/global/u2/pymatgen/io/cif.py:44: UserWarning: Please install optional dependency pybtex\n"
    first = "INFO:custodian.custodian:Starting job no. 1 (QCJob) attempt no. 1. Errors thus far = 0, 0.\n"
    ran = "INFO:custodian.custodian:QCJob.run has completed. Checking remaining handlers\n"
    done = "INFO:custodian.custodian:Run completed. Total time taken = 0:08:21.647910.\n"
    assert verdict(warn + first + ran + done, patterns).failure_class is FailureClass.SUCCESS
    gave_up = "ERROR:custodian.custodian:Max errors reached: 5.\n"
    assert verdict(first + ran + gave_up + done, patterns).failure_class is not FailureClass.SUCCESS
    tb = ('Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
          "    c.run()\nValueError: bad input\n")
    assert verdict(first + ran + done + tb, patterns).failure_class is not FailureClass.SUCCESS
    assert verdict(done, patterns).failure_class is not FailureClass.SUCCESS


def test_nwchem_and_qchem_last_words_are_a_finished_run(patterns: PatternSet) -> None:
    """NWChem's closing 'Total times' (src/nwchem.F, after every task) and Q-Chem's boxed 'Thank you very much for
    using Q-Chem.  Have a nice day.' are the program's word that it ended normally, at the log's end; a Davidson
    warning it went on after does not take it back (heldout588), a fatal error after the thanks of a first job
    does."""
    warned = " WARNING: detci_dvddiag0: Davidson diagonalization failed to converge in    100 iterations\n"
    nw = " Task  times  cpu:        1.0s     wall:        1.1s\n \n Total times  cpu:       11.6s     wall:       15.3s\n"
    assert verdict(warned + nw, patterns).failure_class is FailureClass.SUCCESS
    assert verdict(nw + warned + "\n\n\n", patterns).failure_class is not FailureClass.SUCCESS
    box = "        *************************************************************\n"
    thanks = ("        *  Thank you very much for using Q-Chem.  Have a nice day.  *\n"
              "        *                                                           *\n" + box)
    assert verdict(" Total job time:  0.30s(wall), 0.19s(cpu)\n" + box + thanks, patterns).failure_class \
        is FailureClass.SUCCESS
    fatal = (" Q-Chem fatal error occurred in module libgen/gen_scfman.C, line 123:\n\n"
             "  SCF failed to converge\n\n")
    assert verdict(box + thanks + "Running Job 2 of 2 mol.qin\n" + fatal, patterns).failure_class \
        is not FailureClass.SUCCESS


def test_a_lost_julia_worker_yields_to_its_own_reason_below(patterns: PatternSet) -> None:
    """Julia's master says only 'Worker N terminated.' (a lost worker: unknown, retried); the worker's own reason
    relayed below it (Distributed's 'Master process (id 1) could not connect within 60.0 seconds.') decides
    (heldout345)."""
    lost = "Worker 2 terminated.\nERROR: LoadError: ProcessExitedException(2)\n"
    assert verdict(lost, patterns).failure_class is FailureClass.UNKNOWN
    told = lost + "Master process (id 1) could not connect within 60.0 seconds.\nexiting.\n"
    assert verdict(told, patterns).failure_class is FailureClass.NETWORK


def test_mpichs_catch_all_error_classes_are_the_librarys_not_the_programs(patterns: PatternSet) -> None:
    """MPICH's 'Other MPI error' and 'Internal MPI error' name no wrong call: an mpi4py exception carrying them says
    the library failed (heldout352); a wrong-call class such as 'Message truncated' stays the program's."""
    stack = ('  File "mpi4py/MPI/Comm.pyx", line 1406, in mpi4py.MPI.Comm.send\n'
             "mpi4py.MPI.Exception: {}, error stack:\n"
             "PMPI_Send(157).......: MPI_Send(buf=0x177e5c2e0, count=2078079, MPI_BYTE, dest=1051, tag=1, "
             "MPI_COMM_WORLD) failed\n")
    for text in ("Other MPI error", "Internal MPI error!"):
        assert verdict(stack.format(text), patterns).failure_class is not FailureClass.USER_ERROR, text
    assert verdict(stack.format("Message truncated"), patterns).failure_class is FailureClass.USER_ERROR


def test_dmidecodes_error_attributes_are_an_inventory_not_an_error(patterns: PatternSet) -> None:
    """A node-inventory script's dmidecode output names attributes from the word 'Error' ('Error Correction Type:
    Multi-bit ECC'): what the hardware supports, never the error line a failed run's class is read from
    (heldout351); a program's own 'Error: ...' line beside it still is."""
    inventory = ("Cache Information\n\tSocket Designation: L1 - Cache\n\tInstalled Size: 3 MB\n"
                 "\tError Correction Type: Multi-bit ECC\n\tSystem Type: Unified\n"
                 "Memory Device\n\tError Information Handle: Not Provided\n")
    assert verdict(inventory + "job exited with status 1\n", patterns).failure_class is not FailureClass.USER_ERROR
    assert verdict(inventory + "Error: input deck 'run.in' not found\n",
                   patterns).failure_class is FailureClass.USER_ERROR


def test_an_out_of_memory_nccl_warning_appended_to_xlas_line_decides(patterns: PatternSet) -> None:
    """XLA's one-line NCCL error appends NCCL's last warning to its own line: a CUDA allocation failure quoted there
    is the cause, as it is on a line below (heldout355); without it the line stays NCCL's."""
    head = ("NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details).")
    tail = "; current tracing scope: all-reduce-start.285\n"
    appended = head + " Last NCCL warning(error) log entry (may be unrelated) 'Cuda failure 2 'out of memory''." + tail
    assert verdict(appended, patterns).failure_class is FailureClass.OOM
    assert verdict(head + tail, patterns).failure_class is not FailureClass.OOM


def test_nextflows_stats_after_an_aborted_session_are_no_success(patterns: PatternSet) -> None:
    """Nextflow's end-of-run stats with no failed task are a success (heldout360), but not after Session.abort: a
    script error aborts the run with no task failed."""
    stats = ("Apr-28 16:03:24.683 [main] DEBUG nextflow.trace.StatsObserver - Workflow completed > WorkflowStats"
             "[succeedCount=9; failedCount=0; ignoredCount=0; cachedCount=2; succeedDuration=2h 24m 18s]\n")
    aborted = ("Apr-28 15:10:14.132 [main] DEBUG nextflow.Session - Session aborted -- Cause: Unknown variable "
               "'vcf_to_whole_gcta_grm'\n")
    assert verdict(stats, patterns).failure_class is FailureClass.SUCCESS
    assert verdict(aborted + stats, patterns).failure_class is not FailureClass.SUCCESS


def test_a_reframe_sanity_error_of_a_job_that_never_ran_is_no_program_error(patterns: PatternSet) -> None:
    """ReFrame's sanity error that only says the job's output file is missing, in a FAILURE INFO whose node list
    is None: the job was never placed, so no output of the program was judged (heldout365); with a node list, the
    same missing file is the test's own verdict."""
    def report(nodes: str) -> str:
        return ("FAILURE INFO for stream_build_test (run: 1/1)\n"
                f"  * Node list: {nodes}\n  * Job type: batch job (id=70)\n  * Failing phase: sanity\n"
                "  * Reason: sanity error: rfm_job.out: No such file or directory\n")
    assert verdict(report("None"), patterns).failure_class is FailureClass.UNKNOWN
    assert verdict(report("pacu01"), patterns).failure_class is FailureClass.USER_ERROR


def test_open_mpis_terminated_normally_banner_is_no_finished_word(patterns: PatternSet) -> None:
    """ORTE prints 'Primary job  terminated normally, but 1 process returned a non-zero exit code' only for a job it
    aborted: the banner, even cut short by a poster ('Primary job terminated normally......'), is never the
    program's word that it finished (heldout369)."""
    for banner in ("Primary job terminated normally......\n",
                   "Primary job  terminated normally, but 1 process returned\n",
                   "Child job 2 terminated normally, but 1 process returned\n"):
        assert verdict(banner, patterns).failure_class is not FailureClass.SUCCESS, banner


@pytest.mark.parametrize("done", ["Job 'raysubmit_W8nYZjW4HEFG6Mqa' succeeded\n",
                                  "NAME                 STATE                TIME\n"
                                  "pytorch-simple       Succeeded            2024-01-01 10:00:00\n"])
def test_a_job_clients_final_success_is_a_status_a_failure_line_overrides(patterns: PatternSet, done: str) -> None:
    """The Ray Jobs CLI's "Job '<id>' succeeded" and the Kubeflow training SDK's Succeeded row are the job's final
    status (heldout366): alone, a success; a failure line anywhere in the log (here one the OOM killer wrote after
    it) still decides, as it does beside an exit 0."""
    assert verdict(done, patterns).failure_class is FailureClass.SUCCESS
    killed = "Memory cgroup out of memory: Killed process 1234 (python) total-vm:1234kB\n"
    assert verdict(done + killed, patterns).failure_class is FailureClass.OOM


_HEAP_ABORT_THEN_CLOSE = (
    "double free or corruption (!prev)\n"
    "Fatal error in PMPI_Finalize: Other MPI error, error stack:\n"
    "PMPI_Finalize(348)...........: MPI_Finalize failed\n"
    "MPID_nem_lmt_send_COOKIE(350): OFI tagged sendto failed "
    "(ofi_msg.c:350:MPID_nem_ofi_iStartContigMsg:Connection refused)\n"
)


def test_connection_errors_after_glibc_found_the_heap_corrupt_are_its_aftermath(patterns: PatternSet) -> None:
    """glibc's malloc aborting on a corrupt heap ('double free or corruption') is the process's own memory: the
    connection refused that MPI_Finalize reports after it is how the ranks went down, not a network fault
    (heldout382, pmodels/mpich#3665). The same connection error with no heap abort before it is the network's."""
    crashed = verdict(_HEAP_ABORT_THEN_CLOSE, patterns)
    assert crashed.failure_class is FailureClass.RANK_KILLED, crashed.reason
    network = verdict(_HEAP_ABORT_THEN_CLOSE.split("\n", 1)[1], patterns)
    assert network.failure_class is FailureClass.NETWORK, network.reason
    after = verdict(_HEAP_ABORT_THEN_CLOSE.split("\n", 1)[1] + "double free or corruption (!prev)\n", patterns)
    assert after.failure_class is FailureClass.NETWORK, after.reason


def test_an_out_of_memory_said_only_in_terminates_what_line_names_the_host_of_the_abort(
        patterns: PatternSet) -> None:
    """libstdc++'s terminate handler reports an uncaught exception in two lines, 'terminate called after throwing
    ...' and '  what():  MSG', then aborts: where only the message says out of memory (an allocator's own exception
    type, umpire::out_of_memory_error), the abort Open MPI's handler reports next still names the host (heldout379)."""
    log = (
        "terminate called after throwing an instance of 'umpire::out_of_memory_error'\n"
        "  what():  ! Umpire runtime_error [/opt/Kripke/tpl/umpire/src/umpire/alloc/CudaMallocAllocator.hpp:38]: "
        "cudaMalloc( bytes = 169869312 ) failed with error: out of memory\n"
        "[ccloud-gpu-hpc-1:12613] *** Process received signal ***\n"
        "[ccloud-gpu-hpc-1:12613] Signal: Aborted (6)\n"
        "[ccloud-gpu-hpc-1:12613] Signal code:  (-6)\n"
        "[ccloud-gpu-hpc-1:12613] *** End of error message ***\n"
    )
    result = verdict(log, patterns)
    assert result.failure_class is FailureClass.OOM, result.reason
    assert result.blamed_hosts == (Host("ccloud-gpu-hpc-1"),), result.reason


def test_a_flux_jobs_row_is_a_final_status_a_line_that_says_why_overrides(patterns: PatternSet) -> None:
    """A `flux jobs` listing's row says how a job ended in two letters (flux-core result.c: CD completed, F
    failed): a CD row alone is a success, an F row is none; a line that says why decides before either, wherever
    it stands, and a listing with an F row below a CD row is no success (heldout387)."""
    done = "    ƒCJTuUPR flux     hostname   CD      4      4   0.623s flux-sample-1,gffw-compute-a-[001-003]\n"
    alone = verdict(done, patterns)
    assert alone.failure_class is FailureClass.SUCCESS and not alone.retryable, alone.reason
    failed = verdict("     ƒy5hqHZ online   flux     hostname    F      1      1   0.020s flux-sample3\n", patterns)
    assert failed.failure_class is not FailureClass.SUCCESS, failed.reason
    killed = verdict(done + "Out of memory: Killed process 4242 (hostname) total-vm:1024kB\n", patterns)
    assert killed.failure_class is FailureClass.OOM, killed.reason
    listing = verdict(done + "     ƒy5hqHZ online   flux     hostname    F      1      1   0.020s flux-sample3\n",
                      patterns)
    assert listing.failure_class is not FailureClass.SUCCESS, listing.reason


def test_a_terminate_report_whose_message_is_the_programs_own_error_is_no_crash(patterns: PatternSet) -> None:
    """libstdc++'s terminate handler reports an uncaught exception, then aborts: where its message (the 'what():'
    line or the next) is the program's own error (a library it could not load), that error decides, not the
    terminate line as a crash before it (heldout391, CUDA-Q's runtime_error quoting dlerror). A terminate report
    with no such message stays a crash."""
    report = ("terminate called after throwing an instance of 'std::runtime_error'\n"
              "  what():  Failed to launch kernel. Error: Failed to execute the kernel on the remote server\n")
    missing = ('Error message: "Failed to open simulator backend library: /opt/cudaq/lib/libnvqir-nvidia-mqpu.so: '
               'cannot open shared object file: No such file or directory."\n')
    own = verdict(report + missing, patterns)
    assert own.failure_class is FailureClass.USER_ERROR, own.reason
    crash = verdict(report, patterns)
    assert crash.failure_class is FailureClass.RANK_KILLED, crash.reason



def test_a_terminate_whose_what_line_is_a_watchdog_timeout_is_that_timeouts_abort(patterns: PatternSet) -> None:
    """PyTorch before 2.2 threw the NCCL watchdog's timeout as a std::runtime_error: libstdc++'s terminate line, then
    its what() line with the timeout, then torchrun's SIGTERMs (snap-research/discoscene#5, heldout659). The abort
    is how the timed-out rank stops, so the timeout decides (network), not a crash first."""
    text = ("terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=806, OpType=BROADCAST, "
            "Timeout(ms)=1800000) ran for 1801027 milliseconds before timing out.\n"
            "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 561635 closing signal SIGTERM\n")
    got = verdict(text, patterns)
    assert got.failure_class is FailureClass.NETWORK and got.blamed_hosts == (), got.reason
    crash = verdict("terminate called after throwing an instance of 'std::runtime_error'\n"
                    "  what():  bad header in input deck\n", patterns)
    assert crash.failure_class is FailureClass.RANK_KILLED, crash.reason

_CASTRO_ABORTS = "".join(f"amrex::Abort::{rank}::State has NaNs in the density component::check_for_nan() !!!\n"
                         for rank in (23, 30, 38, 43, 47))


def test_amrex_aborts_of_several_ranks_account_for_their_sigabrts_and_are_the_programs_own_stop(
        patterns: PatternSet) -> None:
    """Several ranks calling amrex::Abort at once print their messages first and one SIGABRT each after them
    (AMReX-Astro/Castro#2263, heldout393): each SIGABRT is an abort's own, so the application's check decides
    (user_error, nobody blamed); a SIGABRT more than there were aborts is a crash besides. An abort quoting a GPU
    runtime's error (AMReX_GpuError.H) is not read as the application's own stop."""
    own = verdict(_CASTRO_ABORTS + "SIGABRT\n" * 5, patterns)
    assert own.failure_class is FailureClass.USER_ERROR and own.blamed_hosts == (), own.reason
    more = verdict(_CASTRO_ABORTS + "SIGABRT\n" * 6, patterns)
    assert more.failure_class is not FailureClass.USER_ERROR, more.reason
    gpu = verdict("amrex::Abort::0::GPU last error detected in file ../Src/Base/AMReX_GpuLaunch.H line 123: an illegal "
                  "memory access was encountered !!!\n", patterns)
    assert gpu.failure_class is not FailureClass.USER_ERROR, gpu.reason
    # CUDA's launch-out-of-resources is the launch configuration's fault whoever prints it (heldout522): user_error
    # from nvidia.cuda_launch_out_of_resources, not from the abort being the application's own stop.
    launch = verdict("amrex::Abort::0::GPU last error detected in file ../Src/Base/AMReX_GpuLaunch.H line 123: too many "
                     "resources requested for launch !!!\n", patterns)
    assert launch.failure_class is FailureClass.USER_ERROR, launch.reason
    assert "nvidia.cuda_launch_out_of_resources" in launch.reason, launch.reason


_SELBAL_ERROR = ("Error in mcmc.list(lapply(draws, function(draw) draw$level_1[[i]])) :\n"
                 "  Arguments must be mcmc objects\n")
_LOST_CORES_WARNING = ("In addition: Warning message:\n"
                       "In mclapply(1:chains, function(i) run_single_chain(i, cal.cbs, hyper_prior),  :\n"
                       "  scheduled cores 1, 2, 8 did not deliver results, all values of the jobs will be affected\n")


def test_an_r_error_above_mclapplys_lost_cores_warning_gives_way_to_the_lost_workers(patterns: PatternSet) -> None:
    """R prints a call's held-back warnings after the error that ends it ('In addition: Warning message:'): mclapply's
    'scheduled cores ... did not deliver results' below an error was raised first, when the forked children died,
    and the error is the script tripping over the results they never sent (heldout399). The lost workers decide
    (unknown, retryable); the same error without the warning is the script's own mistake."""
    lost = verdict(_SELBAL_ERROR + _LOST_CORES_WARNING, patterns)
    assert lost.failure_class is FailureClass.UNKNOWN and lost.retryable, lost.reason
    assert not lost.blamed_hosts
    own = verdict(_SELBAL_ERROR, patterns)
    assert own.failure_class is FailureClass.USER_ERROR and not own.retryable, own.reason


def _gadi_footer(used: str) -> str:
    return ("Solving Stokes Projector (n = 42) (dt = 0.025)\n\n"
            "======================================================================================\n"
            "                  Resource Usage on 2020-10-15 12:56:10:\n"
            "   Job Id:             12371698.gadi-pbs\n"
            "   Exit Status:        271 (Linux Signal 15 SIGTERM Termination)\n"
            "   Memory Requested:   4.0GB                 Memory Used: 2.15GB          \n"
            f"   Walltime requested: 15:00:00            Walltime Used: {used}        \n"
            "======================================================================================\n")


@pytest.mark.parametrize("rc", [None, 271])
def test_gadis_footer_with_the_walltime_used_at_or_past_the_request_is_walltime(patterns: PatternSet,
                                                                              rc: int | None) -> None:
    """NCI Gadi's job footer gives the walltime requested and used on one line: used at or past the request says
    the walltime limit ended the job (walltime, not retried: a retry hits the same limit), as the PBS Pro epilogue's
    pair does (heldout411). A job that ended with walltime left was stopped by something else, and the footer says
    nothing of what."""
    for used in ("15:01:13", "15:00:00"):
        v = verdict(_gadi_footer(used), patterns, rc=rc)
        assert v.failure_class is FailureClass.WALLTIME and not v.retryable, (used, v.reason)
        assert v.blamed_hosts == ()
    under = verdict(_gadi_footer("03:25:30"), patterns, rc=rc)
    assert under.failure_class is not FailureClass.WALLTIME, under.reason


def _gadi_sigkill_footer(used: str) -> str:
    return ("======================================================================================\n"
            "                  Resource Usage on 2021-01-28 12:21:23:\n"
            "   Job Id:             16186372.gadi-pbs\n"
            "   Exit Status:        137 (Linux Signal 9 SIGKILL Kill, unblockable)\n"
            f"   Memory Requested:   4.0GB                 Memory Used: {used}           \n"
            "   Walltime requested: 00:05:00            Walltime Used: 00:01:29        \n"
            "======================================================================================\n")


def test_gadis_footer_sigkilled_with_all_its_memory_used_is_oom(patterns: PatternSet) -> None:
    """NCI Gadi's footer with exit status 137 (SIGKILL) and the memory used at the memory requested: the job was
    killed at its memory limit (oom, not retried; heldout530). Used under the request, the SIGKILL says nothing of
    why: it stays the signal's."""
    for used in ("4.0GB", "4.2GB"):
        v = verdict(_gadi_sigkill_footer(used), patterns)
        assert v.failure_class is FailureClass.OOM and not v.retryable, (used, v.reason)
        assert v.blamed_hosts == () and v.exclude_hosts == ()
    for used in ("2.15GB", "900.5MB"):
        under = verdict(_gadi_sigkill_footer(used), patterns)
        assert under.failure_class is FailureClass.RANK_KILLED, (used, under.reason)


_ASPECT_END = ("   Postprocessing:\n"
               "     RMS, max velocity:        0.162 m/year, 2.29 m/year\n"
               "     Writing depth average:    output/depth_average\n\n"
               "Termination requested by criterion: end time\n\n\n")
_ASPECT_TIMER_REPORT = (
    "+----------------------------------------------+------------+------------+\n"
    "| Total wallclock time elapsed since start     |      24.3s |            |\n"
    "|                                              |            |            |\n"
    "| Section                          | no. calls |  wall time | % of total |\n"
    "+----------------------------------+-----------+------------+------------+\n"
    "| Assemble Stokes system           |         1 |     0.128s |      0.53% |\n"
    "| Assemble Stokes system Newton    |        11 |      3.17s |        13% |\n"
    "| Solve Stokes system              |        28 |      9.66s |        40% |\n"
    "+----------------------------------+-----------+------------+------------+\n\n"
    "-- Total wallclock time elapsed including restarts: 24s\n")


def test_aspects_termination_criterion_stays_its_last_word_through_its_closing_report(patterns: PatternSet) -> None:
    """ASPECT's 'Termination requested by criterion: end time' is followed by its own closing report (the timer
    table, the total wallclock line): with no exit status, the run still ended on its own word that it finished
    (heldout409). A crash after the report takes the success back, and so does a log that goes on well past
    any closing report."""
    done = verdict(_ASPECT_END + _ASPECT_TIMER_REPORT, patterns)
    assert done.failure_class is FailureClass.SUCCESS, done.reason
    crash = ("[cn042:31337] *** Process received signal ***\n"
             "[cn042:31337] Signal: Segmentation fault (11)\n")
    assert verdict(_ASPECT_END + _ASPECT_TIMER_REPORT + crash, patterns).failure_class is not FailureClass.SUCCESS
    more = "".join(f"     Writing graphical output: output/solution/solution-{i:05d}\n" for i in range(200))
    assert verdict(_ASPECT_END + more, patterns).failure_class is not FailureClass.SUCCESS


@pytest.mark.parametrize("log", [
    ("================    End of simulation     ===============\n\n"
     "Total time (seconds):         591.617\n"
     " Assembly time (seconds):     215.487 (Failed: 6.72982; 3.12307%)\n"
     "Overall Newton Iterations:    1659 (Failed: 63; 3.79747%)\n"
     "Overall Linear Iterations:    25395 (Failed: 663; 2.61075%)\n"),  # OPM Flow's trailer, heldout405
    ("$ mpirun -disable-auto-cleanup -l -n 2 ./recvdead\n"
     "[0] MPIR_update_failed_procs: {1}\n"
     "[0]  No Errors\n"),  # MPICH's test suite, heldout416
], ids=["opm-trailer-failed-counts", "mpich-test-no-errors"])
def test_a_finished_line_whose_own_words_say_failed_or_errors_still_finished(patterns: PatternSet, log: str) -> None:
    """Some programs' last word that they finished carries 'Failed' or 'Errors' in its fixed wording: OPM Flow's
    trailer counts the linear iterations of steps it chopped and redid ('(Failed: 663; 2.6%)'), MPICH's test suite
    reports its error count as ' No Errors'. Read whole, such a line is a finished run, not a failure: with no exit
    status and nothing after it, a success."""
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.SUCCESS, v.reason


@pytest.mark.parametrize("gap", ["\n", ""], ids=["empty-line", "empty-line-dropped"])
def test_a_kokkos_messages_own_last_line_inside_a_terminate_report_still_reaches_its_abort(
        patterns: PatternSet, gap: str) -> None:
    """Kokkos built without stack traces ends an exception's message with 'Traceback functionality not available'
    and an empty line, inside libstdc++'s terminate report: the abort Open MPI's handler reports after it is still
    the handler's own, so a GPU out-of-memory said only in the 'what():' line is placed on that abort's host
    (heldout401, lammps#542); as well when a paste dropped that empty line."""
    log = ("terminate called after throwing an instance of 'std::runtime_error'\n"
           "  what():  cudaCreateTextureObject( & tex_obj , & resDesc, & texDesc, NULL ) error( "
           "cudaErrorMemoryAllocation): out of memory ../../lib/kokkos/core/src/Cuda/Kokkos_CudaSpace.cpp:296\n"
           "Traceback functionality not available\n"
           f"{gap}"
           "[bigfacet:07706] *** Process received signal ***\n"
           "[bigfacet:07706] Signal: Aborted (6)\n"
           "[bigfacet:07706] Signal code:  (-6)\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.OOM and not v.retryable, v.reason
    assert names(v.blamed_hosts) == ["bigfacet"], v.reason
    assert v.exclude_hosts == ()


def test_a_terminate_report_joined_into_a_loggers_record_still_reaches_its_abort(patterns: PatternSet) -> None:
    """spdlog's '[date] [name] [level] msg' record takes in the lines under it that carry no prefix of their own,
    libstdc++'s 'terminate called ...' and '  what():  std::bad_alloc' among them: the abort Open MPI's handler
    reports right after that report is still the out-of-memory process's own, and names where it ran (heldout404,
    purify#267)."""
    log = ("[2019-07-16 13:46:21.503] [purify] [debug] Adding channel 63 to plane...\n"
           "[2019-07-16 13:59:03.584] [purify] [debug] Using distributed image MPI measurement operator.\n"
           "terminate called after throwing an instance of 'std::bad_alloc'\n"
           "  what():  std::bad_alloc\n"
           "[lbq-TP300:28858] *** Process received signal ***\n"
           "[lbq-TP300:28858] Signal: Aborted (6)\n"
           "[lbq-TP300:28858] Signal code:  (-6)\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.OOM, v.reason
    assert names(v.blamed_hosts) == ["lbq-tp300"], v.reason
    assert v.exclude_hosts == ()


_STIMELA_TB = ('Traceback (most recent call last):\n'
               '  File "/home/u/Stimela/examples/simulation_pipeline.py", line 118, in <module>\n'
               '    pipeline.run()\n'
               '  File "/home/u/venv/lib/python3.9/site-packages/stimela/recipe.py", line 761, in run\n'
               '    raise PipelineException(exc, self.completed, job, self.remaining) from None\n'
               "stimela.exceptions.PipelineException: Job 'Imaging MS, robust=2' failed: {}\n")


@pytest.mark.parametrize("log", [
    _STIMELA_TB.format("docker returns error code 1"),  # Stimela's cab runner, heldout404
    "ERROR: No Heartbeat\nThis job was killed because a heartbeat was not received for 30 seconds.\n",  # cryoSPARC
], ids=["returns-error-code", "heartbeat"])
def test_a_wrappers_error_code_or_a_missed_heartbeat_is_not_the_users_mistake(patterns: PatternSet, log: str) -> None:
    """The last resort reads a program's bare error line as the user's mistake unless it speaks of the
    infrastructure: a wrapper's 'returns error code N' for the container it ran says only that it failed, a missed
    heartbeat that something stopped answering; neither says why, so the failure is unknown and retried
    (heldout404). The same wrapper's error with the program's own reason stays the user's. The rules alone: with no
    exit status the log is then left to its words, whose guess follows the shipped counts (wordguess)."""
    v = rules_verdict(log, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and v.retryable, v.reason
    assert verdict(log, patterns, rc=1).failure_class is FailureClass.UNKNOWN
    own = verdict(_STIMELA_TB.format("no column named CORRECTED_DATA"), patterns)
    assert own.failure_class is FailureClass.USER_ERROR, own.reason


_MRBAYES_RUN = ("        623000 -- (-164520.244) (-164508.877) [-164114.194] (-164149.176) -- 81:38:43\n"
                "        624000 -- (-164529.369) (-164508.715) [-164106.839] (-164135.822) -- 81:30:35\n"
                "   Ctrl-C detected\n"
                "   Do you really want to stop the run (y/n)?\n")


@pytest.mark.parametrize("stop", [
    "slurmstepd: error: *** JOB 4193123 ON n042 CANCELLED AT 2024-03-02T11:02:17 DUE TO TIME LIMIT ***\n",
    "=>> PBS: job killed: walltime 172832 exceeded limit 172800\n",
], ids=["slurm-time-limit", "pbs-walltime"])
def test_mrbayes_ctrl_c_is_a_summary_a_schedulers_time_limit_overrides(patterns: PatternSet, stop: str) -> None:
    """MrBayes prints 'Ctrl-C detected' for SIGINT and SIGTERM alike (heldout403): alone, someone stopped the run
    (cancelled); a scheduler's time-limit line in the same log, even printed after it, says the TERM was the time
    limit's, and walltime decides."""
    alone = verdict(_MRBAYES_RUN, patterns)
    assert alone.failure_class is FailureClass.CANCELLED, alone.reason
    timed = verdict(_MRBAYES_RUN + stop, patterns)
    assert timed.failure_class is FailureClass.WALLTIME, timed.reason


_FLUX_HELLO = ("f5Cm644CF: completed MPI_Init in 1.110s. There are 4 tasks\n"
               "f5Cm644CF: completed first barrier in 0.028s\n"
               "f5Cm644CF: completed MPI_Finalize in 0.041s\n")


@pytest.mark.parametrize(("after", "expected"), [
    ("flux-job: task(s) Killed\n", FailureClass.RANK_KILLED),
    ("3600.1s: job.exception f5Cm644CF type=timeout severity=0 resource allocation expired\n", FailureClass.WALLTIME),
], ids=["tasks-killed", "timeout-exception"])
def test_flux_hellos_finalize_line_is_a_summary_a_failure_line_overrides(
        patterns: PatternSet, after: str, expected: FailureClass) -> None:
    """flux-core's t/mpi/hello prints 'completed MPI_Finalize' from rank 0 once every rank got through it
    (heldout397): alone, a success; a line that says the job failed (its tasks killed, its time limit's exception),
    even printed after it, decides."""
    alone = verdict(_FLUX_HELLO, patterns)
    assert alone.failure_class is FailureClass.SUCCESS, alone.reason
    failed = verdict(_FLUX_HELLO + after, patterns)
    assert failed.failure_class is expected, failed.reason


_RAY_SUCCEEDED = "------------------------------------------\nJob 'raysubmit_5Xq1' succeeded\n------------------------------------------\n"
_OMPI_SEGV = ("[nid001:12345] *** Process received signal ***\n[nid001:12345] Signal: Segmentation fault (11)\n"
              "[nid001:12345] Signal code: Address not mapped (1)\n")


@pytest.mark.parametrize("rc", [1, 2, 135, 137, -11])
@pytest.mark.parametrize("text", [_FLUX_HELLO, _RAY_SUCCEEDED], ids=["flux-hello", "ray-job"])
def test_a_failed_exit_status_outranks_a_line_saying_the_run_succeeded(
        patterns: PatternSet, text: str, rc: int) -> None:
    """The launcher's non-zero status or signal is its word that the attempt failed: a success line in the log (one
    step's, an earlier run's, a rank's) cannot make it a success (a supervisor would stop retrying a failed job)."""
    v = verdict(text, patterns, rc=rc)
    assert v.failure_class is not FailureClass.SUCCESS, v.reason
    assert v.retryable or v.failure_class is FailureClass.USER_ERROR, v.reason


@pytest.mark.parametrize("before", [True, False], ids=["crash-before", "crash-after"])
@pytest.mark.parametrize("text", [_FLUX_HELLO, _RAY_SUCCEEDED], ids=["flux-hello", "ray-job"])
def test_a_ranks_crash_outranks_a_summary_saying_the_run_succeeded(
        patterns: PatternSet, text: str, before: bool) -> None:
    """A rank's own signal, before the success summary or after it (a crash at exit, after the program's last word),
    is the run's failure: rank_killed on the crashed rank's host, not success."""
    v = verdict(_OMPI_SEGV + text if before else text + _OMPI_SEGV, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED, v.reason
    assert [h.name for h in v.blamed_hosts] == ["nid001"]


@pytest.mark.parametrize("words", [
    "flux-job: task(s) exited with exit code 1\n",
    "srun: error: nid001: task 3: Exited with exit code 1\n",
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n",
], ids=["flux-job", "srun", "mpirun"])
def test_a_launchers_word_that_tasks_exited_non_zero_outranks_a_success_summary(
        patterns: PatternSet, words: str) -> None:
    """A launcher's word that some task exited non-zero (flux-job, srun, mpirun) after a test program's finalize
    line: the run did not succeed (no cause shown: unknown, retryable)."""
    v = verdict(_FLUX_HELLO + words, patterns)
    assert v.failure_class is FailureClass.UNKNOWN, v.reason
    assert v.retryable


def test_exit_zero_does_not_count_success_lines_as_error_lines(patterns: PatternSet) -> None:
    """With exit 0 the reason counts the error lines the run got past; a line saying it succeeded is none."""
    assert verdict(_RAY_SUCCEEDED, patterns, rc=0).reason == "success: exit 0"
    noted = verdict("ERROR: Could not open file input.dat\n" + _RAY_SUCCEEDED, patterns, rc=0)
    assert noted.failure_class is FailureClass.SUCCESS and "1 error line(s)" in noted.reason, noted.reason


_PARSL_MISMATCH = ("2019-04-01 20:56:02.415 parsl.executors.high_throughput.executor:329 [WARNING]  Executor shutting"
                   " down due to version mismatch in interchange\n")


def test_a_stop_the_program_logs_at_warning_level_still_decides(patterns: PatternSet) -> None:
    """Parsl's HighThroughputExecutor logs its version-mismatch shutdown at WARNING and then fails every task
    (heldout431): the logger's level does not make it an error the run carried on past, as it does for an ordinary
    warning-level exception line."""
    v = verdict(_PARSL_MISMATCH, patterns)
    assert v.failure_class is FailureClass.USER_ERROR, v.reason
    assert "parsl.executor_version_mismatch" in v.reason
    assert not v.retryable
    carried_on = verdict("2019-04-01 20:56:02.415 root:12 [WARNING]  ValueError: bad chunk size, using 64\n", patterns)
    assert carried_on.failure_class is not FailureClass.USER_ERROR, carried_on.reason


_E3SM_NCERR = ("  0:  initializing elements...\n"
               "  0:  ERROR: HANDLE_NCERR\n"
               "  0: #0  0x5c10e39 in __shr_abort_mod_MOD_shr_abort_backtrace\n"
               "  0:    at /home/u/e3sm/share/util/shr_abort_mod.F90:104\n"
               "  0: #1  0x5c1101b in __shr_abort_mod_MOD_shr_abort_abort\n"
               "  0:    at /home/u/e3sm/share/util/shr_abort_mod.F90:61\n")


def test_the_backtrace_of_a_stop_is_not_a_second_cause(patterns: PatternSet) -> None:
    """E3SM's netCDF check stops with 'ERROR: HANDLE_NCERR' (the reason only in atm.log) and shr_abort prints its
    backtrace below (heldout433): the shr_abort frames are that same stop, so the run is unknown (nothing says why
    the file call failed), not the model's own mistake; the frames alone still read as the model's stop."""
    v = verdict(_E3SM_NCERR, patterns)
    assert v.failure_class is FailureClass.UNKNOWN, v.reason
    assert "cesm.handle_ncerr_stop" in v.reason
    frames_only = verdict("".join(_E3SM_NCERR.splitlines(keepends=True)[2:]), patterns)
    assert frames_only.failure_class is FailureClass.USER_ERROR, frames_only.reason


_NEXTFLOW_TASK_FAILED = (
    "Jul-09 15:47:16.505 [TaskFinalizer-2] DEBUG nextflow.processor.TaskProcessor - Handling unexpected condition for\n"
    "  task: name=TRIM (3); work-dir=/scratch/u/work/dc/cd370c\n"
    "  error [nextflow.exception.ProcessFailedException]: Process `TRIM (3)` terminated with an error exit status (1)\n"
    "Jul-09 15:47:16.634 [TaskFinalizer-2] ERROR nextflow.processor.TaskProcessor - Error executing process > 'TRIM (3)'\n"
    "\nCaused by:\n  Process `TRIM (3)` terminated with an error exit status (1)\n\n"
    "Command exit status:\n  1\n\nCommand error:\n"
    "  gzip: sample3.fq.gz: No such file or directory\n\n"
    "Work dir:\n  /scratch/u/work/dc/cd370c\n")


def test_nextflows_restated_task_failure_gives_way_to_the_tasks_own_error(patterns: PatternSet) -> None:
    """Nextflow's debug log restates a failed task as 'error [ProcessFailedException]: Process ... terminated with
    an error exit status (1)' (heldout444): that says the task failed, not why; the task's own stderr quoted under
    'Command error:' (a missing input) decides."""
    v = verdict(_NEXTFLOW_TASK_FAILED, patterns)
    assert v.failure_class is FailureClass.USER_ERROR, v.reason
    assert "sample3.fq.gz" in v.reason, v.reason


_SRUN_SEGV_AFTER_CANCEL = (
    "slurmstepd: error: *** STEP 1234.0 ON nid00535 CANCELLED AT 2019-11-04T10:21:44 ***\n"
    "srun: error: nid00536: tasks 251-255: Segmentation fault\n"
    "srun: Terminating job step 1234.0\n")


def test_a_steps_cancel_without_reason_before_sruns_crash_report_is_its_teardown(patterns: PatternSet) -> None:
    """slurmstepd's 'STEP ... CANCELLED AT <time>' (no DUE TO) can reach stderr before srun's report that a node's
    tasks died of SIGSEGV (heldout456): a scancel never ends tasks with a fault signal, so the crash is the cause
    (its node the origin) and the cancel the teardown; the same line with a reason, or with no crash reported, still
    decides as a cancellation."""
    v = verdict(_SRUN_SEGV_AFTER_CANCEL, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED, v.reason
    assert names(v.blamed_hosts) == ["nid00536"], v.reason
    alone = verdict(_SRUN_SEGV_AFTER_CANCEL.splitlines(keepends=True)[0], patterns)
    assert alone.failure_class is FailureClass.CANCELLED, alone.reason


def _intel_banners(ranks: range) -> str:
    rule = "=" * 83 + "\n"
    return "".join(rule + "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                   f"=   RANK {r} PID {4400 + r} RUNNING AT gn59\n=   KILLED BY SIGNAL: 9 (Killed)\n" + rule
                   for r in ranks)


def test_sigkill_banners_after_a_ranks_own_error_are_the_clean_up(patterns: PatternSet) -> None:
    """Intel MPI prints a BAD TERMINATION banner per rank it killed; when every banner says SIGKILL and a rank's own
    error stands above them (a CUDA error 700, heldout490), the kills are mpiexec's clean-up: unknown, no host
    blamed or evicted. The same banners with nothing above them keep the first banner's host as the origin."""
    error = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    v = verdict(error + _intel_banners(range(3)), patterns)
    assert v.failure_class is FailureClass.UNKNOWN, v.reason
    assert v.blamed_hosts == () and v.exclude_hosts == (), v.reason
    alone = verdict(_intel_banners(range(3)), patterns)
    assert alone.failure_class is FailureClass.RANK_KILLED and names(alone.blamed_hosts) == ["gn59"], alone.reason


_PIP_FAILED = ("  ERROR: Failed building wheel for neuroh5\nFailed to build neuroh5\nerror: failed-wheel-build-for-install\n\n"
               "\u00d7 Failed to build installable wheels for some pyproject.toml based projects\n\u2570\u2500> neuroh5\n")


def test_a_failed_pip_build_is_the_users_unless_the_run_it_went_on_to_crashed(patterns: PatternSet) -> None:
    """pip's refusal to install what it could not build (heldout494's Polaris jobs) ends the install step: alone it
    is user_error; when the job script went on with its old build and a rank then died of SIGABRT, the crash decides
    (the rank's host the origin), and older pip's wording reads alike."""
    alone = verdict(_PIP_FAILED, patterns)
    assert alone.failure_class is FailureClass.USER_ERROR, alone.reason
    old = verdict("ERROR: Could not build wheels for mpi4py, which is required to install pyproject.toml-based "
                  "projects\n", patterns)
    assert old.failure_class is FailureClass.USER_ERROR, old.reason
    crashed = verdict(_PIP_FAILED + "numprocs=1\n"
                      "x3005c0s1b1n0.hsn.cm.polaris.alcf.anl.gov: rank 0 died from signal 6 and dumped core\n", patterns)
    assert crashed.failure_class is FailureClass.RANK_KILLED, crashed.reason
    assert names(crashed.blamed_hosts) == ["x3005c0s1b1n0"], crashed.reason


_STREAM_END = ("Triad:          86804.4     0.039043     0.029031     0.047365\n"
               "-------------------------------------------------------------\n"
               "Solution Validates: avg error less than 1.000000e-13 on all three arrays\n"
               "-------------------------------------------------------------\n")
_UCX_FINALIZE = ("[g090:1261043] common_ucx.c:440 disconnecting from rank 0\n"
                 "[g093:1949867] common_ucx.c:440 disconnecting from rank 5\n"
                 "[g091:1549666] common_ucx.c:440 disconnecting from rank 2\n"
                 "[g090:1261044] common_ucx.c:404 waiting for 0 disconnect requests\n")


def test_streams_validation_line_is_its_last_word_through_ucxs_finalize_chatter(patterns: PatternSet) -> None:
    """STREAM's 'Solution Validates: avg error less than %e ...' (checkSTREAMresults; 'error' is the tolerance it
    checked) is its last word: a success alone, and after it Open MPI's verbose UCX finalize lines ('common_ucx.c:440
    disconnecting from rank 0', MPI_Finalize taking the endpoints down) are the library's teardown, not more of the
    program (heldout529). Another line among them or after them, or a failure after it, leaves the rule out."""
    alone = verdict(_STREAM_END, patterns)
    assert alone.failure_class is FailureClass.SUCCESS, alone.reason
    finalized = verdict(_STREAM_END + _UCX_FINALIZE, patterns)
    assert finalized.failure_class is FailureClass.SUCCESS, finalized.reason
    for more in ("still computing\nstill computing\nstill computing\n",
                 "[n1:12] pml_ucx.c:411 connecting to proc. 5\n[n1:12] pml_ucx.c:411 connecting to proc. 6\n"
                 "[n1:12] pml_ucx.c:411 connecting to proc. 7\n"):
        cut = verdict(_STREAM_END + _UCX_FINALIZE + more, patterns)
        assert cut.failure_class is not FailureClass.SUCCESS, (more, cut.reason)
    gap = _UCX_FINALIZE.replace("\n[g091", "\nother output\nmore output\n[g091")
    assert verdict(_STREAM_END + gap, patterns).failure_class is not FailureClass.SUCCESS
    killed = verdict(_STREAM_END + _UCX_FINALIZE + "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT 2026-01-01T00:00:00 "
                     "DUE TO TIME LIMIT ***\n", patterns)
    assert killed.failure_class is not FailureClass.SUCCESS, killed.reason


def test_nccls_libibverbs_notice_keeps_a_log_from_the_words_guess(patterns: PatternSet) -> None:
    """NCCL's 'Failed to open libibverbs.so[.1]' (WARN in older releases, INFO later) says it goes on over sockets:
    a log whose only read line is it is unknown, not the network failure its words ('nccl', 'failed', 'warn') read
    like (heldout529); a real NCCL failure beside it still decides."""
    text = ("v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
            "NCCL version 2.9.6+cuda11.2\n"
            "v100-gpu-5:9210:9210 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
            "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
            "           8             2   float       0    45.82    0.00    0.00    N/A    38.17    0.00    0.00    N/A\n")
    bare = verdict(text, patterns)
    assert bare.failure_class is FailureClass.UNKNOWN, bare.reason
    assert not bare.blamed_hosts
    failed = verdict(text + "v100-gpu-1:14926:14940 [0] include/socket.h:403 NCCL WARN Net : Connection closed by "
                     "remote peer\n", patterns)
    assert failed.failure_class is FailureClass.NETWORK, failed.reason


_CONDOR_SUBMIT = "000 (33976484.000.000) 10/01 23:01:11 Job submitted from host: <10.128.11.86:46125?addrs=10.128.11.86-46125>\n"
_CONDOR_EXEC = "001 (33976484.000.000) 10/01 23:05:02 Job executing on host: <{host}:40541?addrs={host}-40541>\n"
_CONDOR_END = "005 (33976484.000.000) 10/01 23:06:29 Job terminated.\n\t(0) Abnormal termination (signal {sig})\n"


def test_condor_crash_is_placed_on_its_execute_host(patterns: PatternSet) -> None:
    """HTCondor's job-terminated event names no host; its execute event (001) says where the job ran, so a crash
    signal there is blamed on that host (heldout543, heldout312). Two execute hosts (a job run again elsewhere) name
    neither; a SIGKILL (signal 9) comes from outside and places nothing; the submit host is never blamed."""
    one = verdict(_CONDOR_SUBMIT + _CONDOR_EXEC.format(host="10.128.10.120") + _CONDOR_END.format(sig=6), patterns)
    assert one.failure_class is FailureClass.RANK_KILLED, one.reason
    assert names(one.blamed_hosts) == ["10.128.10.120"], one.reason
    assert not one.node_fault
    two = verdict(_CONDOR_SUBMIT + _CONDOR_EXEC.format(host="10.128.10.120") + _CONDOR_EXEC.format(host="10.128.10.7")
                  + _CONDOR_END.format(sig=11), patterns)
    assert two.failure_class is FailureClass.RANK_KILLED, two.reason
    assert not two.blamed_hosts, two.reason
    killed = verdict(_CONDOR_SUBMIT + _CONDOR_EXEC.format(host="10.128.10.120") + _CONDOR_END.format(sig=9), patterns)
    assert not killed.blamed_hosts, killed.reason


def test_a_condor_eviction_followed_by_a_users_removal_is_a_cancel(patterns: PatternSet) -> None:
    """HTCondor logs a removed running job as an eviction (004) then its abort (009); a removal a user's tool asked
    for carries its reason under the heading, ending '(by user NAME)' (heldout614): the eviction is the removal's
    first step, not a preemption. The same eviction with no abort after it stays a preemption."""
    evicted = ("004 (7858010.000.000) 2020-07-13 10:40:36 Job was evicted.\n"
               "\t(0) CPU times\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n")
    removed = ("009 (7858010.000.000) 2020-07-13 10:40:36 Job was aborted.\n"
               "\tShut down Jupyter notebook server (by user karpel)\n")
    got = verdict(evicted + removed, patterns)
    assert got.failure_class is FailureClass.CANCELLED, got.reason
    alone = verdict(evicted, patterns)
    assert alone.failure_class is FailureClass.PREEMPTED, alone.reason


_LSF_REPORT_134 = ("Sender: LSF System <lsfadmin@b07u32a>\n"
                   "Subject: Job 204757: <hpcx-xbx> in cluster <qmhpc> Exited\n\n"
                   "Job was executed on host(s) <24*b07u32a>, in queue <ssc-cpu>, as user <apac4> in cluster <qmhpc>"
                   " at Sun Sep 22 02:34:02 2024\n"
                   "Exited with exit code 134.\n")


def test_processes_that_never_started_put_no_crash_on_the_jobs_host(patterns: PatternSet) -> None:
    """An LSF report's exit 134 with the one host the job ran on is put there; after mpirun's '72 total processes
    failed to start' (orte_quit.c) the ranks never ran, so no host is the crash site (heldout630)."""
    ran = verdict(_LSF_REPORT_134, patterns)
    assert names(ran.blamed_hosts) == ["b07u32a"], ran.reason
    unstarted = verdict("72 total processes failed to start\n\n" + _LSF_REPORT_134, patterns)
    assert not unstarted.blamed_hosts and not unstarted.exclude_hosts, unstarted.reason


_IOR_END = ("Summary of all tests:\n"
            "write     5283179.91 5241637.38 5256845.52   15072.89 2641589.95 2620818.69 2628422.76    7536.44\n"
            "Finished            : Mon Jun 16 04:41:47 2025\n")


def test_iors_finished_line_is_its_last_word(patterns: PatternSet) -> None:
    """IOR's 'Finished            : <ctime>' (PrintTestEnds after the summary of all tests, hpc/ior ior-output.c) is
    its last word: with no exit status, a success, through a job script's clean-up lines after it (heldout564: an
    IOR run on DAOS under PBS); a failure after it, or more output past the closing window, leaves the rule out."""
    done = verdict(_IOR_END + "Successfully destroyed container peak_bw_test_cont\nMon 16 Jun 2025 04:42:38 AM UTC\n",
                   patterns)
    assert done.failure_class is FailureClass.SUCCESS, done.reason
    killed = verdict(_IOR_END + "=>> PBS: job killed: walltime 3610 exceeded limit 3600\n", patterns)
    assert killed.failure_class is not FailureClass.SUCCESS, killed.reason
    more = verdict(_IOR_END + "still running\nstill running\nstill running\nstill running\n", patterns)
    assert more.failure_class is not FailureClass.SUCCESS, more.reason


_DASK_LOGGED = ("distributed.utils - ERROR - 'tcp://127.0.0.1:40000'\n"
                "Traceback (most recent call last):\n"
                '  File "/opt/conda/lib/python3.8/site-packages/distributed/utils.py", line 655, in log_errors\n'
                "    yield\n"
                '  File "/opt/conda/lib/python3.8/site-packages/distributed/scheduler.py", line 4321, in add_worker\n'
                "    ws = self.workers[address]\n"
                "KeyError: 'tcp://127.0.0.1:40000'\n")


def test_dasks_logged_copy_of_its_own_exception_is_no_user_error(patterns: PatternSet) -> None:
    """A traceback whose first frame is Dask's log_errors is a copy its logger printed of an exception it caught
    inside the scheduler (heldout568): not the user's program failing. The same KeyError raised in the user's own
    code is still a user error."""
    logged = verdict(_DASK_LOGGED, patterns)
    assert logged.failure_class is not FailureClass.USER_ERROR, logged.reason
    own = verdict("Traceback (most recent call last):\n"
                  '  File "/home/u/run.py", line 12, in <module>\n'
                  "    x = table[key]\n"
                  "KeyError: 'tcp://127.0.0.1:40000'\n", patterns)
    assert own.failure_class is FailureClass.USER_ERROR, own.reason


def test_sigusr2_is_lsfs_run_limit_only_in_an_lsf_jobs_log(patterns: PatternSet) -> None:
    """LSF sends SIGUSR2 at a job's run limit (bsub -W): a bare 'User defined signal 2' in a log that is an LSF
    job's (its #BSUB directives) is a walltime; the same line with nothing saying LSF (Slurm's --signal, a user's
    kill -USR2) is not."""
    usr2 = "step 41 of 200\nUser defined signal 2\n"
    lsf = verdict("#BSUB -W 8:00\n#BSUB -n 16\n" + usr2, patterns)
    assert lsf.failure_class is FailureClass.WALLTIME, lsf.reason
    assert not lsf.blamed_hosts and not lsf.exclude_hosts
    assert verdict(usr2, patterns).failure_class is not FailureClass.WALLTIME


_OMPI_ABORT_BANNER = ("--------------------------------------------------------------------------\n"
                      "MPI_ABORT was invoked on rank 15 in communicator MPI_COMM_WORLD\n"
                      "with errorcode 1.\n\n"
                      "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
                      "--------------------------------------------------------------------------\n")
_RANK_TRACEBACK = ("Traceback (most recent call last):\n"
                   '  File "/work/bench/md_pair.py", line 34, in <module>\n'
                   "    sim.run(steps)\n")


def test_an_mpi_abort_made_by_an_interrupt_is_a_cancel(patterns: PatternSet) -> None:
    """An excepthook answers every uncaught exception with MPI_Abort, a KeyboardInterrupt too: under Open MPI's
    banner, ranks whose tracebacks end in KeyboardInterrupt were interrupted (heldout634, mpirun forwarding a
    signal), a cancellation wherever the banner landed; the same banner over a TypeError stays the user's error."""
    interrupted = verdict("mpirun: Forwarding signal 18 to job\n" + _OMPI_ABORT_BANNER + _RANK_TRACEBACK
                          + "KeyboardInterrupt\nKeyboardInterrupt\n", patterns)
    assert interrupted.failure_class is FailureClass.CANCELLED, interrupted.reason
    assert not interrupted.blamed_hosts and not interrupted.exclude_hosts, interrupted.reason
    banner_last = verdict(_RANK_TRACEBACK + "KeyboardInterrupt\n" + _OMPI_ABORT_BANNER, patterns)
    assert banner_last.failure_class is FailureClass.CANCELLED, banner_last.reason
    mistake = verdict(_OMPI_ABORT_BANNER + _RANK_TRACEBACK + "TypeError: unsupported operand type(s)\n", patterns)
    assert mistake.failure_class is FailureClass.USER_ERROR, mistake.reason


_UCX_QUERY_ERRNO = ("[1728044825.539698] [b03u18a:184672:0]       ib_verbs.h:84   UCX  ERROR "
                    "ibv_exp_query_device(mlx5_0) returned 38: No space left on device\n")


def test_errno_words_of_a_verbs_call_are_no_full_disk(patterns: PatternSet) -> None:
    """UCX logs a verbs call's return value and then %m, a stale errno's words: every rank's 'returned 38: No space
    left on device' at start-up, in an LSF job that then completed, is no full file system (heldout639). A full disk
    said by the program itself still decides."""
    done = verdict(_UCX_QUERY_ERRNO * 3 + "Running benchmark\n\nSuccessfully completed.\n", patterns)
    assert done.failure_class is FailureClass.SUCCESS, done.reason
    full = verdict(_UCX_QUERY_ERRNO + "OSError: [Errno 28] No space left on device: '/scratch/ckpt/step_40.pt'\n",
                   patterns)
    assert full.failure_class is FailureClass.TRANSIENT_IO, full.reason


def test_a_sycl_selector_that_finds_no_device_is_the_set_up(patterns: PatternSet) -> None:
    """SYCL's device selector throws 'No device of requested type available.' when the node, container or runner
    offers no device of the kind asked for; uncaught, std::terminate aborts the process: the abort is how it
    stopped, the missing device is why (heldout654, as rounds 196, 593 and 629 label it): user_error, nobody blamed."""
    got = verdict("terminate called after throwing an instance of 'sycl::_V1::runtime_error'\n"
                  "  what():  No device of requested type available. -1 (PI_ERROR_DEVICE_NOT_FOUND)\n"
                  "Aborted (core dumped)\n", patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason
    assert not got.blamed_hosts and not got.exclude_hosts, got.reason


def _hydra_killed_banner(rank: int, host: str) -> str:
    return ("===================================================================================\n"
            "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
            f"=   RANK {rank} PID {317602 + rank} RUNNING AT {host}\n"
            "=   KILLED BY SIGNAL: 9 (Killed)\n"
            "===================================================================================\n\n")


def test_a_ranks_own_error_below_hydras_sigkill_banners_decides(patterns: PatternSet) -> None:
    """A wrapper that appends the job's stderr after its stdout puts the rank's own error below Hydra's banners,
    which all report the clean-up's SIGKILL (heldout642): the error decides and no banner's host is blamed or
    evicted; a rank's own crash report there is a rank_killed that evicts nobody."""
    banners = "".join(_hydra_killed_banner(rank, "n02p050") for rank in (1, 2, 3))
    opened = verdict(banners + "forrtl: Is a directory\n"
                     "forrtl: severe (30): open failure, unit 38, file /scratch/nwchem/QA\n", patterns)
    assert opened.failure_class is FailureClass.USER_ERROR, opened.reason
    assert not opened.blamed_hosts and not opened.exclude_hosts, opened.reason
    crashed = verdict(banners + "forrtl: severe (71): integer divide by zero\n", patterns)
    assert crashed.failure_class is FailureClass.RANK_KILLED, crashed.reason
    assert not crashed.exclude_hosts, crashed.reason


def test_r_halting_below_a_lost_workers_trailer_is_the_lost_worker(patterns: PatternSet) -> None:
    """R prints the error, 'Calls:', the warnings it held back, then 'Execution halted' (errors.c verrorcall_dflt):
    a halt that far below the future package's lost worker is that loss, not the script's own error (heldout658)."""
    got = verdict("Error in unserialize(node$con) :\n"
                  "  Failed to retrieve the value of ClusterFuture (<none>) from cluster RichSOCKnode #2 (PID 420 on "
                  "localhost 'localhost'). The reason reported was 'error reading from connection'. Post-mortem "
                  "diagnostic: No process exists with this PID, i.e. the localhost worker is no longer alive.\n"
                  "Calls: sourceWithProgress ... resolved -> resolved.ClusterFuture -> receiveMessageFromWorker\n"
                  "In addition: Warning message:\n"
                  "In system(\"timedatectl\", intern = TRUE) :\n"
                  "  running command 'timedatectl' had status 1\n"
                  "Execution halted\n", patterns)
    assert got.failure_class is not FailureClass.USER_ERROR, got.reason
    assert not got.blamed_hosts, got.reason


def test_unames_node_name_is_where_the_job_ran(patterns: PatternSet) -> None:
    """A CI job that prints `uname` output names the node it runs on (coreutils uname.c: kernel name, node name, ...,
    machine); NVML's driver/library mismatch below it is that node's fault (heldout654)."""
    got = verdict("Linux itscrd-v100.cern.ch x86_64\nnvidia-smi -L\n"
                  "Failed to initialize NVML: Driver/library version mismatch\n", patterns)
    assert got.failure_class is FailureClass.GPU_HW, got.reason
    assert names(got.blamed_hosts) == ["itscrd-v100"], got.reason


#: Programs' own closing reports, each the last thing a run that finished prints, read by a rule (not the words
#: guess) as the run's word that it finished when no exit status is known:
#: VASP's OUTCAR totals ('General timing and accounting informations for this job:' then a dozen lines; heldout656),
#: whatever WARNING box came before; the Theano Deep Learning Tutorials' 'Optimization complete with best validation
#: score ...' and timing line (lisa-lab/DeepLearningTutorials code/SdA.py; cancel5_heldout669); IPython's %time
#: report, printed only when the timed code returned (ExecutionMagics.time shows the traceback and returns otherwise),
#: closing a notebook cell whose Dask workers paused over their memory limit and resumed (notebooks2_heldout695).
_CLOSING_REPORTS = {
    "vasp": ("   WARNING: If single coordinates had been selected the selection of coordinates\n"
             " reached required accuracy - stopping structural energy minimisation\n\n"
             " General timing and accounting informations for this job:\n"
             " ========================================================\n\n"
             "                  Total CPU time used (sec):       20.730\n"
             "                            User time (sec):       20.491\n"
             "                          System time (sec):        0.239\n"
             "                         Elapsed time (sec):       22.011\n\n"
             "                   Maximum memory used (kb):      213748.\n"
             "                   Average memory used (kb):          N/A\n\n"
             "                          Minor page faults:        48940\n"
             "                          Major page faults:         6434\n"
             "                 Voluntary context switches:         2005\n"),
    "dltutorials": ("epoch 330, minibatch 120/120, validation error 5.716667 %\n"
                    "epoch 331, minibatch 120/120, validation error 5.716667 %\n"
                    "Optimization complete with best validation score of 5.666667 %, on iteration 36960, with test "
                    "performance 5.666667 %\n"
                    "The training code for file  ran for 330.08m\n"),
    "ipython-time": ("distributed.worker - WARNING - Worker is at 123% memory usage. Pausing worker.  Process memory: "
                     "2.58 GB -- Worker memory limit: 2.09 GB\n"
                     "distributed.worker - WARNING - Worker is at 51% memory usage. Resuming worker. Process memory: "
                     "1.08 GB -- Worker memory limit: 2.09 GB\n"
                     "CPU times: user 4.42 s, sys: 1.49 s, total: 5.9 s\nWall time: 5.04 s\n"),
}


@pytest.mark.parametrize("program", sorted(_CLOSING_REPORTS))
def test_a_programs_closing_report_is_its_finished_word(program: str, patterns: PatternSet) -> None:
    """A run that ends on its program's closing report finished, read by the rule, not the last resort."""
    got = verdict(_CLOSING_REPORTS[program], patterns)
    assert got.failure_class is FailureClass.SUCCESS, got.reason
    assert "a guess from the words" not in got.reason, got.reason


@pytest.mark.parametrize("program", ["dltutorials", "ipython-time"])
def test_a_traceback_after_a_closing_report_still_decides(program: str, patterns: PatternSet) -> None:
    """The closing report counts only at the end: the program's own error after it is still its error."""
    got = verdict(_CLOSING_REPORTS[program] + "Traceback (most recent call last):\n"
                  "  File \"<ipython-input-27>\", line 1, in <module>\n"
                  "KeyError: 'x'\n", patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason


def test_psm2s_glued_label_does_not_hide_its_request_descriptor_exhaustion(patterns: PatternSet) -> None:
    """PSM2 glues its '<host>.<pid>' label to the message with no separator (psmi_handle_error); its 'Exhausted N MQ
    irecv request descriptors' below Hydra's SIGKILL clean-up banners is the program's own error (heldout673): no
    banner's host is blamed or evicted."""
    banners = "".join(_hydra_killed_banner(rank, "n02p021") for rank in (0, 8, 9))
    got = verdict(banners + "n02p021.215417Exhausted 1048576 MQ irecv request descriptors, which usually indicates a "
                  "user program error or insufficient request descriptors (PSM2_MQ_RECVREQS_MAX=1048576)\n", patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason
    assert not got.blamed_hosts and not got.exclude_hosts, got.reason


def test_python2s_ioerror_permission_denied_is_the_runs_own_path(patterns: PatternSet) -> None:
    """Python 2 names EACCES IOError (open) or OSError (os calls), not PermissionError (PEP 3151 came with 3.3):
    'IOError: [Errno 13] Permission denied: <path>' on the run's own output path is its setup's fault, as Python 3's
    PermissionError is (marbl/SALSA issue 73, heldout668)."""
    got = verdict("bedfile loaded\nTraceback (most recent call last):\n"
                  "  File \"/apps/salsa/bin/correct.py\", line 105, in <module>\n"
                  "    olens = open(sys.argv[4]+'/scaffold_length_iteration_1','w')\n"
                  "IOError: [Errno 13] Permission denied: 'data/salsa/scaffold_length_iteration_1'\n", patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason
    assert not got.retryable, got.reason
    assert "a guess from the words" not in got.reason, got.reason


_OPENIB_WARNING = ("--------------------------------------------------------------------------\n"
                   "WARNING: There was an error initializing an OpenFabrics device.\n\n"
                   "  Local host:   {host}\n"
                   "  Local device: mlx5_0\n"
                   "--------------------------------------------------------------------------\n")
_FORRTL_SEGV = ("forrtl: severe (174): SIGSEGV, segmentation fault occurred\n"
                "Image              PC                Routine            Line        Source\n"
                "dirac.x            0000000001F37A9A  Unknown               Unknown  Unknown\n"
                "--------------------------------------------------------------------------\n"
                "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
                "the job to be terminated. The first process to do so was:\n\n"
                "  Process name: [[20067,1],0]\n"
                "  Exit code:    174\n")


def _prefixed(text: str, prefix: str) -> str:
    return "".join(prefix + line for line in text.splitlines(keepends=True))


def test_openib_warnings_local_host_places_a_hostless_crash(patterns: PatternSet) -> None:
    """Open MPI 4.x's openib start-up warning names the node of the process that printed it ('Local host: H',
    help-mpi-btl-openib.txt [error in device init]); an Intel Fortran crash whose line names no host happened there
    when it is the one host the log names (heldout667). A crash, so nothing is evicted."""
    got = verdict(_OPENIB_WARNING.format(host="n0259") + _FORRTL_SEGV, patterns)
    assert got.failure_class is FailureClass.RANK_KILLED, got.reason
    assert names(got.blamed_hosts) == ["n0259"], got.reason
    assert not got.exclude_hosts, got.reason
    # Two ranks' warnings on two nodes say nothing of which one crashed.
    two = verdict(_OPENIB_WARNING.format(host="n0259") + _OPENIB_WARNING.format(host="n0260") + _FORRTL_SEGV, patterns)
    assert not two.blamed_hosts, two.reason
    # mpirun's count of the other processes that printed it hides their 'Local host:' rows (show_help aggregation):
    # the one shown is the first process's node only (heldout138, heldout667).
    hidden = verdict(_OPENIB_WARNING.format(host="n0259")
                     + "[n0259:11425] 14 more processes have sent help message help-mpi-btl-openib.txt / error in "
                       "device init\n" + _FORRTL_SEGV, patterns)
    assert hidden.failure_class is FailureClass.RANK_KILLED, hidden.reason
    assert not hidden.blamed_hosts, hidden.reason


def test_rank_prefixed_crash_is_placed_by_its_own_prefixs_host_line(patterns: PatternSet) -> None:
    """A crash line under a rank prefix (srun -l's 'N: ', ctest's test number 'NN: ') is placed by that rank's lines
    only: the one host the log names counts when its line carries the same prefix (heldout667's DIRAC ctest 62);
    another prefix's host line says nothing of it."""
    same = verdict(_prefixed(_OPENIB_WARNING.format(host="lxbk0724") + _FORRTL_SEGV, "62: "), patterns)
    assert same.failure_class is FailureClass.RANK_KILLED, same.reason
    assert names(same.blamed_hosts) == ["lxbk0724"], same.reason
    assert not same.exclude_hosts, same.reason
    other = verdict(_prefixed(_OPENIB_WARNING.format(host="n1"), "5: ") + _prefixed(_FORRTL_SEGV, "3: "), patterns)
    assert other.failure_class is FailureClass.RANK_KILLED, other.reason
    assert not other.blamed_hosts, other.reason


def test_a_dask_clients_refusal_after_its_stream_closed_is_the_lost_connection(patterns: PatternSet) -> None:
    """Dask distributed 1.x let tornado's StreamClosedError ('Stream is closed') end a comm read's traceback
    unwrapped; the client's refusal above it ('Exception: Client not running.  Status: closed') is its consequence,
    not the program's own error (dask/distributed#1249, heldout678): a lost connection, nobody blamed."""
    got = verdict("  File \"/lib/python3.5/site-packages/distributed/client.py\", line 628, in _send_to_scheduler\n"
                  "    raise Exception(\"Client not running.  Status: %s\" % self.status)\n"
                  "Exception: Client not running.  Status: closed\n"
                  "Traceback (most recent call last):\n"
                  "  File \"/lib/python3.5/site-packages/distributed/comm/tcp.py\", line 170, in read\n"
                  "    n_frames = yield stream.read_bytes(8)\n"
                  "tornado.iostream.StreamClosedError: Stream is closed\n", patterns)
    assert got.failure_class is FailureClass.NETWORK, got.reason
    assert got.retryable, got.reason
    assert not got.blamed_hosts and not got.exclude_hosts, got.reason


def test_a_store_gone_under_the_nccl_heartbeat_is_the_network_and_blames_nobody(patterns: PatternSet) -> None:
    """ProcessGroupNCCL's heartbeat monitor warns 'Failed to check the "should dump" flag on TCPStore' and the store
    client's sendRaw warns 'sendBytes failed on SocketImpl(...)' when the c10d store has gone (qibin0506/Cortex issue
    17, heldout676): a network consequence read by the rules, the loopback store naming no host."""
    log = ("[rank1]:[W901 21:19:08.277343715 ProcessGroupNCCL.cpp:1783] [PG ID 0 PG GUID 0(default_pg) Rank 1] Failed "
           "to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: "
           "Broken pipe\n"
           "[rank3]:[W901 21:19:09.254317555 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=51, "
           "addr=[localhost]:40714, remote=[localhost]:29500): Broken pipe\n")
    got = rules_verdict(log, patterns)
    assert got.failure_class is FailureClass.NETWORK, got.reason
    assert not got.blamed_hosts and not got.exclude_hosts and not got.suspect_hosts, got.reason
    peer = rules_verdict(
        "[rank1]:[W901 07:40:20.971331164 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=64, "
        "addr=[gx10-node2]:35986, remote=[::ffff:192.168.0.72]:29501): Broken pipe\n", patterns)
    assert peer.failure_class is FailureClass.NETWORK, peer.reason
    assert names(peer.suspect_hosts) == ["192.168.0.72"] and not peer.blamed_hosts, peer.reason


_NWCHEM_QA_ERROR = (" ------------------------------------------------------------------------\n"
                    " There is an error in the input file\n"
                    " ------------------------------------------------------------------------\n")
_NWCHEM_QA_TEST = (" Running tests/pspw_tpss03_h2o/pspw_tpss03_h2o \n \n     cleaning scratch\n"
                   "     running nwchem (/opt/nwchem/bin/LINUX64/nwchem)  with 4 processors \n \n"
                   "     verifying output ... OK\n \nOK\n")
_CTEST_FAILED = ("193/381 Test #191: system--pw_metal--metal-gaussian ..................................***Failed  "
                 "Required regular expression not found. Regex=[JOB DONE\n")
_CTEST_PASSED = " 66/659 Test  #66: Utility_Test_xv2vesta_verify ..............   Passed    0.03 sec\n"
_SUITE_LIMIT = "slurmstepd: error: *** JOB 4358883 ON lxbk0859 CANCELLED AT 2023-07-16T07:04:38 DUE TO TIME LIMIT ***\n"


@pytest.mark.parametrize(("log", "expected"), [
    (_NWCHEM_QA_ERROR + _NWCHEM_QA_TEST + _SUITE_LIMIT, FailureClass.WALLTIME),
    (_NWCHEM_QA_ERROR + _SUITE_LIMIT, FailureClass.USER_ERROR),  # no test verified after it: the error decides
])
def test_a_test_suite_that_went_on_verifying_tests_after_an_error_was_stopped_by_the_limit(
        patterns: PatternSet, log: str, expected: FailureClass) -> None:
    """NWChem's QA harness prints 'verifying output ...' only for a test whose run exited 0: tests verified after
    one test's input error are progress, and the time limit after them decides (heldout677)."""
    assert verdict(log, patterns).failure_class is expected


def test_ctest_passed_lines_are_progress(patterns: PatternSet) -> None:
    """CTest's 'N/M Test #K: name ....   Passed' counts the suite forward (heldout677)."""
    result = scan((_CTEST_FAILED + _CTEST_PASSED + _SUITE_LIMIT).encode(), patterns)
    assert result.progress is not None and result.progress.last_step == 66
    assert verdict(_CTEST_FAILED + _CTEST_PASSED + _SUITE_LIMIT, patterns).failure_class is FailureClass.WALLTIME


def test_charm_reduction_excess_message_abort_is_the_ranks_own_crash(patterns: PatternSet) -> None:
    """heldout684 (charm 1222): Charm++'s reduction manager aborting on more remote contributions than its tree
    has ('Nodegrp Excess remote reduction message received!') is the runtime's consistency check, that process's
    own abort: rank_killed with no host, not an unread CmiAbort left unknown."""
    log = ("------------- Processor 8347 Exiting: Called CmiAbort ------------\n"
           "Reason: Nodegrp Excess remote reduction message received!\n\n"
           "[8347] Stack Traceback:\n  [8347:0] CmiAbortHelper+0x65  [0x203d12d5]\n"
           "aborting job:\nNodegrp Excess remote reduction message received!\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.RANK_KILLED
    assert v.blamed_hosts == () and v.exclude_hosts == ()
    assert v.retryable


def test_snakemakes_report_of_a_workflow_code_error_is_a_user_error(patterns: PatternSet) -> None:
    """Snakemake prints a Python error in the workflow's own code as '<Name> in line N of F:' (or 'in file F, line
    N:'), without the traceback's colon after the name: a Snakefile that does not parse is the user's error, read by
    the rules (rasilab/bottorff_2022 log.md, heldout683). A rule's failed shell command (CalledProcessError) is not."""
    log = ("Performing computational analyses\n"
           "mkdir: cannot create directory \u2018output\u2019: File exists\n"
           "SyntaxError in line 28 of /scratch/u/wf/simulation_runs/fitting/analyze_results.smk:\n"
           "No rule keywords allowed after run/shell/script/notebook/wrapper/template_engine/cwl in rule analyze_data. "
           "(analyze_results.smk, line 28)\n")
    got = rules_verdict(log, patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason
    assert not got.retryable and not got.blamed_hosts, got.reason
    shell = rules_verdict("CalledProcessError in line 62 of /data/PDXPipeline.snake:\n", patterns)
    assert shell.failure_class is not FailureClass.USER_ERROR, shell.reason


_TF_BFC_NOTICE = ("2020-03-19 04:46:23.559595: W tensorflow/core/common_runtime/bfc_allocator.cc:237] Allocator "
                  "(GPU_0_bfc) ran out of memory trying to allocate 2.05GiB with freed_by_count=0. The caller indicates "
                  "that this is not a failure, but may mean that there could be performance gains if more memory were "
                  "available.\n")


def test_tensorflows_allocator_notice_that_it_is_not_a_failure_is_no_oom(patterns: PatternSet) -> None:
    """TensorFlow's BFC allocator warns it 'ran out of memory' for scratch space its caller can do without and says
    so ('The caller indicates that this is not a failure'): a run that shows only these warnings did not run out of
    memory (heldout688: training stalled at global_step/sec 0); the memory words are not read as a failure."""
    log = ("INFO:tensorflow:global_step/sec: 0\n" + _TF_BFC_NOTICE + _TF_BFC_NOTICE.replace("2.05GiB", "1.55GiB"))
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.UNKNOWN and "memory" not in v.reason
    # The allocator's own failure after its notices is still the run's out-of-memory stop.
    failed = ("2020-03-19 04:46:33.1: W tensorflow/core/common_runtime/bfc_allocator.cc:267] Allocator (GPU_0_bfc) ran "
              "out of memory trying to allocate 16.0KiB.  Current allocation summary follows.\n")
    assert verdict(log + failed, patterns).failure_class is FailureClass.OOM


def test_tensorflows_start_up_cuinit_failure_is_no_missing_device_error(patterns: PatternSet) -> None:
    """TensorFlow's StreamExecutor logs 'failed call to cuInit: CUDA_ERROR_NO_DEVICE' at start-up where no GPU is
    given (a TFJob's CPU pods) and runs on with the CPU (cuda_driver.cc InternalInit): the line alone is no job set
    up without its device (heldout717, a TFJob that failed for a reason its log does not show). The same words
    raised by the program are still the user's set-up."""
    log = ("2018-12-20 09:24:00.624284: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports "
           "instructions that this TensorFlow binary was not compiled to use: AVX2 FMA\n"
           "2018-12-20 09:24:00.631918: E tensorflow/stream_executor/cuda/cuda_driver.cc:397] failed call to cuInit: "
           "CUDA_ERROR_NO_DEVICE\n"
           "2018-12-20 09:24:00.631948: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:157] no NVIDIA GPU "
           "device is present: /dev/nvidia0 does not exist\n")
    v = rules_verdict(log, patterns)
    assert v.failure_class is not FailureClass.USER_ERROR, v.reason
    xla = ("E0000 00:00:1710237662.345678   12 cuda_driver.cc:274] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no "
           "CUDA-capable device is detected\n")
    assert rules_verdict(xla, patterns).failure_class is not FailureClass.USER_ERROR
    raised = "tensorflow.python.framework.errors_impl.InternalError: failed call to cuInit: CUDA_ERROR_NO_DEVICE\n"
    assert rules_verdict(raised, patterns).failure_class is FailureClass.USER_ERROR


def test_sglangs_kv_pool_refusal_is_oom(patterns: PatternSet) -> None:
    """SGLang's model runner found no room for a KV-cache pool ('Not enough memory. Please try to increase
    --mem-fraction-static.', heldout688): the server's memory sizing, oom, not retryable."""
    v = verdict("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
                "self.server_args.mem_fraction_static=0.2\n", patterns)
    assert v.failure_class is FailureClass.OOM and not v.retryable


def test_dashs_missing_command_inside_a_script_is_a_user_error(patterns: PatternSet) -> None:
    """dash (/bin/sh on Debian and Ubuntu images) names a command it cannot find inside a script as
    '<script>: <line>: <cmd>: not found', without bash's 'line' and 'command not found': an MPIJob launcher whose rsh
    agent script ran on a worker pod that has no kubectl (kubeflow/mpi-operator#501, k8strain_heldout693) failed by its
    set-up, read by the rules and not left to the words guess."""
    got = verdict("+ POD_NAME=job-worker-77\n+ shift\n"
                  "+ /opt/kube/kubectl cp /opt/kube/hosts job-worker-77:/etc/hosts_of_nodes\n"
                  "/etc/mpi/kubexec.sh: 10: /opt/kube/kubectl: not found\n", patterns)
    assert got.failure_class is FailureClass.USER_ERROR, got.reason
    assert not got.retryable and not got.blamed_hosts, got.reason
    assert "a guess from the words" not in got.reason, got.reason


def test_dashs_missing_module_command_is_the_scripts_setup(patterns: PatternSet) -> None:
    """dash's 'slurm_script: 9: module: not found' is the same set-up line as bash's 'line 9: module: command not
    found' (a node without Lmod): the script goes on without it, so a time limit after its progress decides, and alone
    it is the user's (md_heldout293 kept its walltime when dash's form was first read, heldout693)."""
    line = "/var/spool/slurmd/job00223/slurm_script: 9: module: not found\n"
    alone = verdict(line, patterns)
    assert alone.failure_class is FailureClass.USER_ERROR, alone.reason
    assert "a guess from the words" not in alone.reason, alone.reason
    later = verdict(line + "INFO:    Mounting image with FUSE.\n"
                    "slurmstepd: error: *** JOB 223 ON cpu-cluster-hpc-1 CANCELLED AT 2024-08-28T21:15:59 DUE TO TIME"
                    " LIMIT ***\n", patterns)
    assert later.failure_class is FailureClass.WALLTIME, later.reason


def test_parsl_worker_pool_that_reached_no_interchange_address_is_network(patterns: PatternSet) -> None:
    """The HTEX worker pool's 'Failed to find a viable address to connect to interchange. Exiting' (it probed every
    address it was given and reached none, then exit 5; heldout699): a connection failure, retryable, nobody
    blamed."""
    v = verdict("Found cores : 4\nLaunching worker: 1\n"
                "Failed to find a viable address to connect to interchange. Exiting\n", patterns)
    assert v.failure_class is FailureClass.NETWORK, v.reason
    assert "parsl.no_viable_interchange_address" in v.reason
    assert v.retryable and not v.blamed


_IPENGINE_EMPTY_URL_FILE = (
    "2018-07-19 09:46:37.313 [IPEngineApp] Loading url_file 'ipengine.json'\n"
    "Traceback (most recent call last):\n"
    '  File "/home/u/envs/p/lib/python3.6/site-packages/ipyparallel/apps/ipengineapp.py", line 264, in init_engine\n'
    "    self.load_connector_file()\n"
    '  File "/home/u/envs/p/lib/python3.6/site-packages/ipyparallel/apps/ipengineapp.py", line 164, in '
    "load_connector_file\n"
    "    d = json.loads(f.read())\n"
    '  File "/home/u/envs/p/lib/python3.6/json/decoder.py", line 357, in raw_decode\n'
    '    raise JSONDecodeError("Expecting value", s, err.value) from None\n'
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n")


def test_ipengine_reading_an_empty_connection_file_is_transient_io(patterns: PatternSet) -> None:
    """An IPython parallel engine whose controller connection file was still empty after ipyparallel's own retries
    (load_connector_file; heldout699): a shared-file-system race of the start-up, transient_io, retryable. The same
    JSONDecodeError outside that frame stays the program's own error."""
    v = verdict(_IPENGINE_EMPTY_URL_FILE, patterns)
    assert v.failure_class is FailureClass.TRANSIENT_IO, v.reason
    assert "ipyparallel.engine_connector_file_empty" in v.reason
    assert v.retryable
    own = verdict("Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n"
                  "    cfg = json.load(f)\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n",
                  patterns)
    assert own.failure_class is FailureClass.USER_ERROR, own.reason


def test_dask_workers_that_never_registered_with_their_scheduler_are_network(patterns: PatternSet) -> None:
    """A Dask worker logs 'Waiting to connect to' its scheduler on start and again after each attempt that failed;
    a run of them for one scheduler and no 'Registered to:' is workers that never reached it (heldout700: a
    dask-jobqueue worker on Summit bound to the wrong interface): network, the scheduler a lead, never blamed. One
    banner line, or a worker that then registered, says nothing of the kind."""
    start = ("distributed.worker - INFO -       Start worker at: tcp://128.219.134.81:44053\n"
             "distributed.worker - INFO - -------------------------------------------------\n")
    wait = "distributed.worker - INFO - Waiting to connect to: tcp://128.219.134.74:34153\n"
    v = verdict(start + wait * 7 + "...\n", patterns)
    assert v.failure_class is FailureClass.NETWORK and not v.blamed_hosts, v.reason
    assert names(v.suspect_hosts) == ["128.219.134.74"]
    assert "never reached" not in verdict(start + wait, patterns).reason
    joined = start + wait * 3 + "distributed.worker - INFO -         Registered to: tcp://128.219.134.74:34153\n"
    assert "never reached" not in verdict(joined, patterns).reason


def test_summits_csm_easy_mode_refusal_of_a_job_script_is_the_users(patterns: PatternSet) -> None:
    """LSF on CORAL machines (CSM 'easy mode') refuses a plain-LSF job script ('-R', '-n', no '-nnodes'), as a
    dask-jobqueue LSFCluster's generated script was on Summit (heldout700): the request's form, user_error."""
    log = ("stderr:\n"
           "ERROR: Resource strings (-R) are not supported in easy mode. Please resubmit without a resource string.\n"
           "ERROR: -n is no longer supported. Please request nodes with -nnodes.\n"
           "ERROR: No nodes requested. Please request nodes with -nnodes.\n")
    v = verdict(log, patterns)
    assert v.failure_class is FailureClass.USER_ERROR and not v.retryable, v.reason


_NF_PROGRESS = ("N E X T F L O W  ~  version 20.07.1\n"
                "Launching `./test.nf` [disturbed_kalam] - revision: 7802839eb1\n"
                "executor >  sge (2)\n")


def test_nextflows_finished_progress_lines_are_a_success_only_when_every_process_ended_well(
        patterns: PatternSet) -> None:
    """Nextflow's console progress redrawn at the run's end, every process line ending in ' ✔' (AnsiLogObserver.line:
    terminated with no errored task) and no summary after it (a short run prints none): with no exit status, the
    run's success (gridsched_heldout730, nextflow#1753). A process line beside it still running, with no task yet or
    errored (' ✘') keeps the finished lines from reading as the run's success."""
    done = verdict(_NF_PROGRESS + "[20/0e34c0] process > align (1) [100%] 1 of 1 ✔\n"
                   "[3c/9a11f2] process > test (1) [100%] 1 of 1 ✔\n", patterns)
    assert done.failure_class is FailureClass.SUCCESS, done.reason
    running = verdict(_NF_PROGRESS + "[20/0e34c0] process > align (1) [ 50%] 1 of 2\n"
                      "[3c/9a11f2] process > test (1) [100%] 1 of 1 ✔\n", patterns)
    assert running.failure_class is not FailureClass.SUCCESS, running.reason
    errored = verdict(_NF_PROGRESS + "[20/0e34c0] process > align (1) [100%] 1 of 1, failed: 1 ✘\n"
                      "[3c/9a11f2] process > test (1) [100%] 1 of 1 ✔\n", patterns)
    assert errored.failure_class is not FailureClass.SUCCESS, errored.reason
