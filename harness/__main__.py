"""``python -m harness``: the ``harness`` console script, for an environment whose scripts folder is not on PATH."""

from .cli.entry import main

if __name__ == "__main__":
    main()
