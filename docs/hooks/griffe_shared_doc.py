"""Griffe extensions for the API reference: shared generator sections, Sphinx roles.

:class:`SharedGeneratorDoc`: the instance generators write the numpydoc
sections they share once (:data:`deplbench.instances.generators.common.SHARED_DOC`)
and the decorator :func:`~deplbench.instances.generators.common.generator_doc`
fills them in at import time. Griffe reads the source without importing it,
so this extension fills the same placeholders in every function decorated
with it. mkdocs.yml loads both extensions for mkdocstrings.

:class:`SphinxRoles`: the docstrings cross-reference with Sphinx roles
(``:func:`~deplbench.solvers.run.solve```), which Markdown would show
literally; each becomes a code span of the name (the last component when
the target starts with ``~``, as Sphinx shows it).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from griffe import Extension, Function

from deplbench.instances.generators.common import SHARED_DOC


class SharedGeneratorDoc(Extension):
    def on_function_instance(self, *, node: Any, func: Function, agent: Any, **kwargs: Any) -> None:
        decorated = isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Name) and d.id == "generator_doc" for d in node.decorator_list)
        if decorated and func.docstring is not None:
            text = func.docstring.value
            for placeholder, section in SHARED_DOC.items():
                # SHARED_DOC is indented for a method-level docstring; griffe's is dedented.
                text = text.replace(placeholder, section.replace("\n    ", "\n"))
            func.docstring.value = text


_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref):`(~?)([^`<>]+?)`")


def _role(match: re.Match) -> str:
    target = match.group(2).strip()
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class SphinxRoles(Extension):
    def on_instance(self, *, node: Any, obj: Any, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_role, obj.docstring.value)
