"""Instance sub-commands: ``generate``, ``validate``, ``schema``.

Usage::

    deplbench generate {realistic,knapsack,scaling,datasets} [--family F] [--class C]
                       [--n-items N] [--seed N] [--param KEY=VALUE ...] [-o FILE]
    deplbench generate FAMILY ... --seeds 1-30 -o DIR     (a population: one file per seed)
    deplbench validate FILE [FILE ...] [--quiet]
    deplbench schema [-o FILE]

Every user error (unknown family or parameter, a value out of range, a file
that is not a valid instance) surfaces as ``error: <message naming the
field>`` with exit status 2, never a traceback (:func:`deplbench.cli.main`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from deplbench.cli.messages import output_path, split_params
from deplbench.errors import DeplbenchError, InstanceError

#: CLI flag → (generator parameter, family that accepts it).
_FAMILY_FLAGS = {
    "family": ("family", "realistic"),
    "item_class": ("item_class", "knapsack"),
    "n_items": ("n_items", "knapsack"),
}


def _parse_value(text: str) -> Any:
    """``--param`` values: JSON literals (numbers, true/false, null, lists),
    anything else as a plain string (``family=alexnet``)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """Turn ``["k=v", ...]`` into a dict.

    Raises
    ------
    InstanceError
        For an entry without ``=`` or a key given twice.
    """
    return {key: _parse_value(value) for key, value in split_params(pairs, InstanceError).items()}


def _families_epilog() -> str:
    from deplbench.instances.generators import available_families, family_parameters

    lines = ["family parameters (--param KEY=VALUE; default in parentheses):"]
    for fam in available_families():
        params = ", ".join(f"{k} ({v})" for k, v in family_parameters(fam).items())
        lines.append(f"  {fam}: {params}")
    return "\n".join(lines)


def register(subparsers) -> None:
    """Add ``generate``, ``validate`` and ``schema`` to the deplbench CLI."""
    from deplbench.instances.generators import KNAPSACK_CLASSES, available_families

    g = subparsers.add_parser(
        "generate",
        help="generate a seeded instance (realistic, knapsack, scaling, datasets)",
        description="Generate one instance, reproducibly: the same family, parameters and seed give "
                    "byte-identical JSON. Assumptions are recorded in provenance.assumptions.",
        epilog=_families_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("generator", choices=available_families(), metavar="FAMILY",
                   help="instance family: " + ", ".join(available_families()))
    g.add_argument("--family", dest="family", choices=["alexnet", "mobilenet", "pact-vgg11"],
                   help="realistic: DNN family (default alexnet)")
    g.add_argument("--class", dest="item_class", choices=list(KNAPSACK_CLASSES),
                   help="knapsack: Pisinger class (default uncorrelated)")
    g.add_argument("--n-items", dest="n_items", type=int, help="knapsack: number of items (default 10)")
    g.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    g.add_argument("--seeds", metavar="SPEC",
                   help="a population: seeds as 'A-B' (inclusive), 'A,B,C' or a mix ('0,3-5'); "
                        "writes DIR/<generator>[-<family>]-seed<N>.json for each into -o DIR")
    g.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="family parameter (repeatable), e.g. loss_max=5 horizon=50")
    g.add_argument("-o", "--output", type=output_path, metavar="FILE", help="output file (default: standard output); "
                   "with --seeds, the output directory (created if its parent exists)")
    g.set_defaults(func=run_generate)

    v = subparsers.add_parser("validate", help="check instance files against the format and its rules")
    v.add_argument("files", nargs="+", metavar="FILE", help="instance JSON file(s)")
    v.add_argument("--quiet", action="store_true", help="print nothing for valid files")
    v.set_defaults(func=run_validate)

    s = subparsers.add_parser("schema", help="print the JSON Schema of the instance format")
    s.add_argument("-o", "--output", type=output_path, metavar="FILE", help="output file (default: standard output)")
    s.set_defaults(func=run_schema)


def _write(text: str, output: str | None) -> None:
    if output in (None, "-"):
        sys.stdout.write(text)
        return
    from deplbench.files import require_writable

    # a named pipe no one reads would hold the write (and the command) forever: refused, as a folder is
    require_writable(output, "--output", InstanceError)
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InstanceError(f"--output {output}: cannot write ({exc.strerror})") from None


def run_generate(args: argparse.Namespace) -> int:
    """Handler of ``deplbench generate``.

    Raises
    ------
    InstanceError
        Unknown or misplaced parameters, or values out of range.
    """
    from deplbench.instances.generators import family_parameters, generate

    params = parse_params(args.param)
    # The help shows a default of None as "(None)": typed as it reads (any case), it means that
    # default. Sweep files stay typed (leave the key out there).
    defaults = family_parameters(args.generator)
    params = {key: None if (isinstance(value, str) and value.lower() == "none" and key in defaults
                            and defaults[key] is None) else value for key, value in params.items()}
    for flag, (name, family) in _FAMILY_FLAGS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        cli = "--" + {"item_class": "class", "n_items": "n-items"}.get(flag, flag)
        if args.generator != family:
            raise InstanceError(f"{cli}: only for the {family} family, not {args.generator}")
        if name in params:
            raise InstanceError(f"{cli}: also given as --param {name}")
        params[name] = value
    if "seed" in params:
        raise InstanceError("--param seed: use --seed")
    if args.seeds is not None:
        return _generate_population(args, params)
    instance = generate(args.generator, seed=0 if args.seed is None else args.seed, **params)
    _write(instance.to_json(), args.output)
    if args.output not in (None, "-"):
        print(f"wrote {args.output}: {instance.name} ({instance.n_models} models, "
              f"{instance.n_clusters} clusters, {instance.n_datasets} datasets, K̄={instance.horizon})",
              file=sys.stderr)
    return 0


#: Largest population one ``--seeds`` call writes (a typo such as 1-30000
#: should not fill a disk).
MAX_POPULATION = 10_000


def parse_seeds(spec: str) -> list[int]:
    """``"1-30"``, ``"0,2,5"`` or ``"0,3-5"`` → the sorted seeds.

    Raises
    ------
    InstanceError
        Naming ``--seeds`` for an empty, negative, reversed or malformed
        range, or a seed listed twice (``0,0``, ``1-5,3``): one file per
        seed is written, so a repeated seed is a typo that would silently
        give fewer instances than listed.
    """
    seeds: set[int] = set()
    for part in str(spec).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise InstanceError(f"--seeds {spec!r}: expected A-B or A,B,... with integers ≥ 0, "
                                f"got {part!r}") from None
        if a < 0:
            raise InstanceError(f"--seeds {spec!r}: seeds must be ≥ 0, got {a}")
        if b < a:
            raise InstanceError(f"--seeds {spec!r}: empty range {part!r} (end {b} < start {a})")
        # looks through the seeds so far, never the range (1-10**12 is refused below, not iterated)
        again = min((s for s in seeds if a <= s <= b), default=None)
        if again is not None:
            raise InstanceError(f"--seeds {spec!r}: seed {again} is listed twice (each seed writes one file)")
        if b - a + 1 + len(seeds) > MAX_POPULATION:
            raise InstanceError(f"--seeds {spec!r}: more than {MAX_POPULATION} seeds")
        seeds.update(range(a, b + 1))
    return sorted(seeds)


def _generate_population(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """``generate ... --seeds SPEC -o DIR``: one instance file per seed."""
    from deplbench.instances.generators import generate

    if args.seed is not None:
        raise InstanceError("--seeds: give either --seed or --seeds, not both")
    seeds = parse_seeds(args.seeds)
    if args.output in (None, "-"):
        raise InstanceError("--output: --seeds writes one file per seed; give a directory with -o DIR")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise InstanceError(f"--output {args.output}: exists and is not a directory")
    if not out.parent.is_dir():
        raise InstanceError(f"--output {args.output}: directory {out.parent} does not exist")
    stem = args.generator + (f"-{params['family']}" if isinstance(params.get("family"), str) else "")
    # generate everything before writing, so a bad parameter writes nothing
    texts = [(f"{stem}-seed{seed:03d}.json", generate(args.generator, seed=seed, **params).to_json())
             for seed in seeds]
    out.mkdir(exist_ok=True)
    for name, text in texts:
        _write(text, str(out / name))
    names = texts[0][0] if len(texts) == 1 else f"{texts[0][0]} … {texts[-1][0]}"
    print(f"wrote {len(texts)} instance{'s' if len(texts) > 1 else ''} to {out}/ ({names})", file=sys.stderr)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """Handler of ``deplbench validate``: exit 0 iff every file is valid.

    Each invalid file prints ``error: <message>`` on stderr (the message
    names the file and the offending field); valid files print a one-line
    summary unless ``--quiet``.
    """
    from deplbench.instances.model import load_instance
    from deplbench.jsonio import number_text as num  # :g would print ω = 0.999999999999 as 1

    status = 0
    for name in args.files:
        try:
            inst = load_instance(name)
        except DeplbenchError as exc:
            msg = str(exc)
            print(f"error: {msg if msg.startswith(str(name)) else f'{name}: {msg}'}", file=sys.stderr)
            status = 2
            continue
        if not args.quiet:
            print(f"ok: {name}: {inst.name!r} — {inst.n_models} models, {len(inst.switches)} switches, "
                  f"{inst.n_clusters} clusters, {inst.n_datasets} datasets, K̄={inst.horizon}, "
                  f"ω={num(inst.omega)}, ℓ(0)={num(inst.initial_loss)}, ℓmax={num(inst.loss_max)}, "
                  f"Tmax={num(inst.time_max)}")
    return status


def run_schema(args: argparse.Namespace) -> int:
    """Handler of ``deplbench schema``."""
    from deplbench.instances.model import instance_schema

    _write(json.dumps(instance_schema(), indent=2, ensure_ascii=False) + "\n", args.output)
    return 0


__all__ = ["register", "parse_params", "parse_seeds", "run_generate", "run_validate", "run_schema"]
