"""Training files checked before they cost an upload: format, encoding, tokens and cost."""
