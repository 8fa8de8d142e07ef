"""Failure classes and what each one means operationally; why a host is kept out.

The class names are shared vocabulary (PRODUCT.md). Each member answers the
three questions a supervisor asks: retry at all? keep the named hosts out?
"""

from __future__ import annotations

import enum


class FailureClass(enum.Enum):
    """Why an attempt ended, as one word a policy can act on."""

    SUCCESS = "success"
    NODE_LOSS = "node_loss"
    RANK_KILLED = "rank_killed"
    WALLTIME = "walltime"
    USER_ERROR = "user_error"
    OOM = "oom"
    TRANSIENT_IO = "transient_io"
    NETWORK = "network"
    GPU_HW = "gpu_hw"
    PREEMPTED = "preempted"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def retryable(self) -> bool:
        """Whether running the same work again can succeed."""
        return self not in _NOT_RETRYABLE

    @property
    def excludes_hosts(self) -> bool:
        """Whether hosts blamed for this class must not be used again."""
        return self in _HOST_FAULTS

    @property
    def attributes_node(self) -> bool:
        """Whether evidence of this class names the node that failed."""
        return self in _HOST_FAULTS

    @classmethod
    def parse(cls, text: str) -> FailureClass:
        """The member named ``text``; ValueError naming the choices otherwise."""
        try:
            return cls(text)
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown failure class {text!r} (choose from {choices})") from None


# A walltime kill is final unless the supervisor learns there is time left;
# an OOM would recur with the same memory request, as Arvados concluded.
_NOT_RETRYABLE = frozenset(
    {
        FailureClass.SUCCESS,
        FailureClass.WALLTIME,
        FailureClass.USER_ERROR,
        FailureClass.OOM,
        FailureClass.CANCELLED,
    }
)

# Only these classes say "this node is bad". Storage and network errors are
# shared-infrastructure trouble: banning the reporting node would retire a
# healthy host (Arvados review: Keep errors are tempfails, no ban).
_HOST_FAULTS = frozenset({FailureClass.NODE_LOSS, FailureClass.RANK_KILLED, FailureClass.GPU_HW})


class QuarantineReason(enum.StrEnum):
    """Why a host is kept out (the words of PRODUCT.md)."""

    #: A log line names the host as the origin of a node fault.
    SCRAPED = "scraped"
    #: The host did not answer a probe that its peers answered.
    PROBED = "probed"
    #: The scheduler reports the node down/not responding (or ended the job NODE_FAIL) and a second
    #: signal agreed (a failed probe, the job's own end).
    SCHEDULER = "scheduler"
    #: The host was active in ``strikes`` unattributed failures that its peers were not all part of.
    STRIKES = "strikes"
    #: Swapped out without evidence, only because ``--blind-rotation`` allowed it.
    BLIND = "blind"

    @classmethod
    def parse(cls, text: str) -> QuarantineReason:
        """The member named ``text``; ValueError naming the choices otherwise."""
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"quarantine reason {text!r}: use one of {sorted(m.value for m in cls)}") from None
