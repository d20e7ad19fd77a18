"""Development tools of the repository (not shipped): the import-linter contract for cycles."""
