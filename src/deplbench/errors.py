"""User-facing errors.

Every error a user can cause (a malformed instance, an inconsistent plan, an
unknown solver parameter, an invalid sweep file) is a :class:`DeplbenchError`
whose message names the offending field and the rule it breaks. The CLI
prints the message and exits with status 2, never a traceback.
"""


class DeplbenchError(Exception):
    """Base class of every error caused by user input."""


class InstanceError(DeplbenchError, ValueError):
    """An instance file or object is malformed or inconsistent."""


class PlanError(DeplbenchError, ValueError):
    """A plan is malformed or does not match its instance."""


class SolverError(DeplbenchError, ValueError):
    """Unknown solver or invalid solver parameters."""


class SweepError(DeplbenchError, ValueError):
    """An invalid sweep file or results store."""
