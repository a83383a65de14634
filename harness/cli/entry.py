"""The ``harness`` console script: signal handling first, then the command line.

Loading the command line imports NumPy, typer and the commands (a few tenths of a second); a Ctrl-C or SIGTERM in
that time used to end in a KeyboardInterrupt traceback. Here the handlers are installed before any of it loads
(``core.interrupt`` imports only the standard library), and an interrupt while it loads is the usual line."""

from __future__ import annotations


def main() -> None:
    from ..core.interrupt import Terminated, install, leave

    install()
    try:
        from .main import main as cli_main

        cli_main(program=True)  # inside the try too: a signal between the import and the boundary's own try is the same line
    except (KeyboardInterrupt, Terminated) as exc:
        leave(exc)


if __name__ == "__main__":
    main()
