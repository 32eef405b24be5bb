"""TORQUE's server error codes and texts (pbs_error_db.h of 6.1): the clients
print the server's text and exit with the code mod 256, so one table serves
every command."""

from __future__ import annotations

UNKJOBID = 15001
NOATTR = 15002
ATTRRO = 15003
IVALREQ = 15004
PERM = 15007
SYSTEM = 15012
BADATVAL = 15016
MODATRRUN = 15017
BADSTATE = 15018
UNKQUE = 15020
QUNOENB = 15023
QUEEXIST = 15027
QUEBUSY = 15029
QUENOEN = 15032
EXCQRESC = 15038
NORERUN = 15040
RESCUNAV = 15046
UNKNODE = 15062
UNKNODEATR = 15063
NODEEXIST = 15066

TEXT = {
    UNKJOBID: "Unknown Job Id Error",
    NOATTR: "Undefined attribute ",
    ATTRRO: "Cannot set attribute, read only or insufficient permission ",
    IVALREQ: "Invalid request",
    PERM: "Unauthorized Request ",
    SYSTEM: "PBS_Server System error: ",
    BADATVAL: "Illegal attribute or resource value for ",
    MODATRRUN: "Cannot modify attribute while job running ",
    BADSTATE: "Request invalid for state of job",
    UNKQUE: "Unknown queue",
    QUNOENB: "Queue is not enabled",
    QUEEXIST: "Queue already exists",
    QUEBUSY: "Cannot delete busy queue",
    QUENOEN: "Cannot enable queue, incomplete definition",
    EXCQRESC: "Job exceeds queue resource limits",
    NORERUN: "job is not rerunnable",
    RESCUNAV: "Resource temporarily unavailable",
    UNKNODE: "Unknown node ",
    UNKNODEATR: "Unknown node-attribute ",
    NODEEXIST: "Node name already exists",
}

# The errno texts the empty-property-list bug was seen to report: the three of
# TRANSCRIPTS.md, and one more from a real 6.1 server (issue 14). It is
# whatever errno holds at the time, so replays accept any (test_torque_double).
BUG_ERRNO_TEXTS = ("Bad file descriptor", "No such file or directory",
                   "Resource temporarily unavailable", "Inappropriate ioctl for device")


class PbsError(Exception):
    """A request the server rejects: its PBSE code and the reply text the
    client prints (the code's text, then ' MSG=<detail>' when there is one)."""

    def __init__(self, code: int, msg: str | None = None, text: str | None = None):
        self.code = code
        base = TEXT[code] if text is None else text
        self.text = base if msg is None else f"{base} MSG={msg}"
        super().__init__(self.text)

    @property
    def exit_status(self) -> int:
        """What a client exits with: the code mod 256."""
        return self.code % 256
