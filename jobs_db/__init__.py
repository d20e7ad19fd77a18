"""jobs_db: the database of training files, fine-tuning jobs and models."""

__all__: list[str] = []
