"""The test suite, laid out as ``src/deplbench`` is (see CONTRIBUTING.md).

A package, as is every folder under it, so that a test module is named by its
path (``tests.solvers.depl.test_depl``): two modules in different folders may
share a file name, and helpers are imported as ``tests.instance_data``.
"""
