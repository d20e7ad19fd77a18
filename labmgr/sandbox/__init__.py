"""An offline server that speaks the parts of the OpenAI API labmgr uses.

It imports nothing from the rest of labmgr: it is a stand-alone fake of the OpenAI API.
"""

__all__: list[str] = []
