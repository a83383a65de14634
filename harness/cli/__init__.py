"""The ``harness`` command line: thin commands over the Python API, the option bundles they share, the one error
boundary that turns failures into located lines and exit codes, and ``harness init``.
In: arguments and files. Out: files, stdout (pipeable) and stderr (progress, messages).
"""
