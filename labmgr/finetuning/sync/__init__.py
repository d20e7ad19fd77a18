"""Keeping the lab's registry in step with the API: `update`, and importing jobs made
elsewhere (from the API's job lists, or from an llmcomp registry)."""
