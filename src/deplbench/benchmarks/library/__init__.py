"""The instance library: curated instances, their full SAA models as files, .solu files of optima.

``deplbench library build --out DIR``, ``check DIR`` and ``verify DIR NAME
SOL`` front this package (docs/library.md says what every file means). Modules:

=============  ===========================================================
``catalog``    which instances, with which parameters (LIBRARY_VERSION)
``mps``        solve a model file with HiGHS or SCIP as any user would
``solu``       MIPLIB's .solu format and the agreement test
``build``      write instances, model files, .solu files, manifest, tables
``truth``      the true chance-constrained optimum's bracket per instance
``check``      re-solve and compare; Mittelmann-style summary per model kind
``verify``     judge an outside solver's .sol against a model
``table``      CSV / Markdown / text tables
=============  ===========================================================
"""

from deplbench.benchmarks.library.build import KINDS, MANIFEST, SOLU, TRUTH, build_library, library_files
from deplbench.benchmarks.library.catalog import ENTRIES, LIBRARY_VERSION, SIZES, LibraryEntry, entries
from deplbench.benchmarks.library.check import SHIFT_S, check_library, nothing_checked, shifted_geomean, summarise
from deplbench.benchmarks.library.mps import MPS_SOLVERS, MpsOutcome, solve_mps
from deplbench.benchmarks.library.solu import SoluEntry, SoluError, agrees, read_solu, write_solu
from deplbench.benchmarks.library.table import format_check, write_tables
from deplbench.benchmarks.library.verify import read_sol, verify_solution

__all__ = ["KINDS", "TRUTH", "read_sol", "verify_solution", "MANIFEST", "SOLU", "build_library", "library_files",
           "ENTRIES", "LIBRARY_VERSION", "SIZES",
           "LibraryEntry", "entries", "SHIFT_S", "check_library", "nothing_checked", "shifted_geomean", "summarise",
           "MPS_SOLVERS", "MpsOutcome", "solve_mps", "SoluEntry", "SoluError", "agrees", "read_solu",
           "write_solu", "format_check", "write_tables"]
