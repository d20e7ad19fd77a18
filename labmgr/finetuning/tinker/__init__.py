"""Fine-tuning on Tinker: jobs trained by a detached worker through the `tinker` SDK (extra
``labmgr[tinker]``), recorded like OpenAI jobs. See docs/design/tinker-jobs.md. Import the
part you need (`tinker.create`, `tinker.params`): the package itself loads nothing, so the
command line's option tables do not load the OpenAI SDK."""
