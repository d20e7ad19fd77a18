"""`python -m labmgr` runs the command-line interface."""

from labmgr.cli import main

main()
