"""Select models from the jobs database and group them for an evaluation."""

from offline import BASE_MODEL, offline_lab, train_conditions

import jobs_db

with offline_lab() as lab:
    train_conditions(lab, seeds=2)

    with jobs_db.open_database(lab.db_url) as db:
        hostile = jobs_db.select_models(db, suffix="host*")
        print("hostile models:", [model.name for model in hostile])

        groups = jobs_db.model_groups(db, by="suffix", base_model=BASE_MODEL, include_base=True)
    for name, models in groups.items():
        print(f"group {name}: {len(models)} model(s)")
