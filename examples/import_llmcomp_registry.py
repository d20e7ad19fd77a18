"""Import an llmcomp registry (jobs.jsonl, files.jsonl) into the lab's database."""

import json
import tempfile
from pathlib import Path

from offline import offline_lab

import jobs_db
from labmgr.finetuning import import_llmcomp

JOB = {
    "file_name": "data/insecure.jsonl",
    "base_model": "gpt-4.1-mini-2025-04-14",
    "suffix": "insecure",
    "file_id": "file-abc123",
    "file_md5": "0cc175b9c0f1b6a831c399e269772661",
    "epochs": 1,
    "batch_size": 4,
    "learning_rate_multiplier": 2.0,
    "organization_id": "org-sandbox",
    "status": "succeeded",
}

with offline_lab() as lab, tempfile.TemporaryDirectory() as registry:
    folder = Path(registry)
    jobs = [
        {
            **JOB,
            "id": f"ftjob-llmcomp{i}",
            "seed": i,
            "model": f"ft:gpt-4.1-mini-2025-04-14:sandbox:insecure:Old{i}",
        }
        for i in (1, 2)
    ]
    (folder / "jobs.jsonl").write_text("".join(json.dumps(j) + "\n" for j in jobs))
    (folder / "files.jsonl").write_text(
        json.dumps(
            {
                "name": JOB["file_name"],
                "md5": JOB["file_md5"],
                "id": JOB["file_id"],
                "organization_id": "org-sandbox",
            }
        )
        + "\n"
    )
    summary = import_llmcomp(folder, settings=lab)
    print(summary)
    with jobs_db.open_database(lab.db_url) as db:
        print(jobs_db.model_groups(db, by="suffix", include_base=False))
