"""An offline server that speaks the parts of the OpenAI API labmgr uses.

It imports nothing from the rest of labmgr: it is a stand-alone fake of the OpenAI API.
Start one with `labmgr sandbox serve` or, from Python::

    from labmgr.sandbox import run_sandbox

    with run_sandbox(job_seconds=1.0) as sb:
        client = OpenAI(base_url=sb.base_url, api_key="sk-test")
"""

from labmgr.sandbox.accounts import Account, AccountBook, AccountsFileError
from labmgr.sandbox.app import SandboxApp, create_app
from labmgr.sandbox.config import SandboxConfig
from labmgr.sandbox.errors import SandboxError
from labmgr.sandbox.limits import LimitTable
from labmgr.sandbox.server import SandboxHandle, is_loopback, run_sandbox, serve_sandbox

__all__ = [
    "Account",
    "AccountBook",
    "AccountsFileError",
    "LimitTable",
    "SandboxApp",
    "SandboxConfig",
    "SandboxError",
    "SandboxHandle",
    "create_app",
    "is_loopback",
    "run_sandbox",
    "serve_sandbox",
]
