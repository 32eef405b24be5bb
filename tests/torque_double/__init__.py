"""A test double for TORQUE 6.1 (pbs_server, pbs_mom, pbs_sched and the client
commands), faithful to the recordings in tests/data/torque: install() puts
qmgr, pbsnodes, qstat, qselect, qalter, qhold, qrls, qrerun, qrun, qdel and
qsub in a directory's bin/, backed by a simulated server in virtual time.

The commands import only what they need (this module loads the API lazily),
so each run starts quickly."""

__all__ = ["TorqueDouble", "install"]


def __getattr__(name: str):
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(name)
