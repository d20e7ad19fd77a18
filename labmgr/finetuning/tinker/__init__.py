"""Fine-tuning on Tinker: jobs trained by a detached worker through the `tinker` SDK (extra
``labmgr[tinker]``), recorded like OpenAI jobs. See docs/design/tinker-jobs.md. The face is
`labmgr.finetuning` (`create_tinker`, `TinkerParams`); like the other parts, this package
re-exports nothing."""
