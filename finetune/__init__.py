"""Fine-tuning on trajforge datasets and evaluation in the same simulated environments.

render.py (pinned family templates, prefix-diff loss masks), sft.py (the SFT loop),
evaluate.py (pass@k / pass^k of an agent on held-out tasks), cli.py (`trajforge finetune sft`,
`trajforge eval`). Never imports trajforge.pipelines or apache_beam.
"""
