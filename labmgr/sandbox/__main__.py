"""`python -m labmgr.sandbox`: serve the `SandboxConfig` JSON on stdin (how `run_sandbox`
starts a subprocess); the first line on stdout is the base URL."""

from __future__ import annotations

import argparse
import signal
import sys

from labmgr.sandbox.config import SandboxConfig
from labmgr.sandbox.errors import SandboxError
from labmgr.sandbox.server import serve_sandbox


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m labmgr.sandbox", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        config = SandboxConfig.from_json(sys.stdin.read())
        # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal: exit quietly.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: sys.exit(0))
        serve_sandbox(
            config, host=args.host, port=args.port, on_listening=lambda url: print(url, flush=True)
        )
    except (SandboxError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
