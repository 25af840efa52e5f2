"""The instance library: curated instances, their exact MILPs as MPS, a .solu of optima.

``deplbench library build --out DIR`` and ``deplbench library check DIR``
front this package (docs/library.md says what every file means). Modules:

=============  ===========================================================
``catalog``    which instances, with which parameters (LIBRARY_VERSION)
``mps``        solve an MPS file with HiGHS or SCIP as any user would
``solu``       MIPLIB's .solu format and the agreement test
``build``      write instances, MPS, .solu, manifest and tables
``check``      re-solve and compare; Mittelmann-style summary
``table``      CSV / Markdown / text tables
=============  ===========================================================
"""

from deplbench.benchmarks.library.build import MANIFEST, SOLU, build_library, library_files
from deplbench.benchmarks.library.catalog import ENTRIES, LIBRARY_VERSION, SIZES, LibraryEntry, entries
from deplbench.benchmarks.library.check import SHIFT_S, check_library, shifted_geomean, summarise
from deplbench.benchmarks.library.mps import MPS_SOLVERS, MpsOutcome, solve_mps
from deplbench.benchmarks.library.solu import SoluEntry, SoluError, agrees, read_solu, write_solu
from deplbench.benchmarks.library.table import format_check, write_tables

__all__ = ["MANIFEST", "SOLU", "build_library", "library_files", "ENTRIES", "LIBRARY_VERSION", "SIZES",
           "LibraryEntry", "entries", "SHIFT_S", "check_library", "shifted_geomean", "summarise",
           "MPS_SOLVERS", "MpsOutcome", "solve_mps", "SoluEntry", "SoluError", "agrees", "read_solu",
           "write_solu", "format_check", "write_tables"]
