"""Griffe extension: fill the generators' shared docstring sections for the API reference.

The instance generators write the numpydoc sections they share once
(:data:`deplbench.instances.generators.common.SHARED_DOC`) and the decorator
:func:`~deplbench.instances.generators.common.generator_doc` fills them in at
import time. Griffe reads the source without importing it, so this extension
fills the same placeholders in every function decorated with it (mkdocs.yml
loads it for mkdocstrings).
"""

from __future__ import annotations

import ast
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
