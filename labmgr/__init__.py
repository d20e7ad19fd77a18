"""labmgr: a lab manager for fine-tuning many OpenAI models and comparing them."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("labmgr")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
