"""Judge accuracy: two judge models asked 40 labelled pairs (each in both orders); each
judge's accuracy with a 95% interval over pairs, and how often it picked the same position
in both orders (a sign of position bias)."""

from offline import offline_lab, scratch_dir

from evals.judge_accuracy import check_judges
from labmgr.demo import data_file

with offline_lab() as lab:
    found = check_judges(
        data_file("judge_pairs.jsonl"),
        ["gpt-4.1-mini", "gpt-4o-mini"],
        out=scratch_dir(lab, "judge-accuracy-example"),
        lab=lab,
        progress=False,
    )
    for judge in found.judges:
        accuracy, bias = judge["accuracy"], judge["position_bias"]
        print(
            f"{judge['judge']}: accuracy {accuracy['value']:.2f} "
            f"[{accuracy['low']:.2f}, {accuracy['high']:.2f}] over {judge['items']} pairs, "
            f"same position in both orders {bias['rate']:.2f}"
        )
    agreement = found.agreement[0]
    print(f"the judges agree on {agreement['agreement']:.0%} of {agreement['n']} verdicts")
    print(f"files: {', '.join(sorted(p.name for p in found.path.iterdir()))}")
