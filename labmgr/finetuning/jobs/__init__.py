"""Creating fine-tuning jobs (checked, uploaded once, queued past the daily limit) and acting
on them afterwards."""
