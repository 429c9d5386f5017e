"""End to end: a real blueprint trajectory written by the embedded SmolLM2-135M model on CPU."""

import asyncio

import pytest

from trajforge.generators.blueprint import run_blueprint
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.tooling import TaskRejected
from trajforge.schemas import Provenance, SamplingParams
from trajforge.verifiers.outcome import verify_outcome


def smallest_task(domain):
    """Of a few synthesized tasks, the one with the fewest utterances (keeps the test fast)."""
    tasks = []
    for seed in range(10):
        try:
            tasks.append(domain.synthesize_task(sample_persona(seed), seed))
        except TaskRejected:
            continue
    assert tasks, "no retail task in 10 seeds"
    return min(tasks, key=lambda t: len(t.scenario.known_info) + len(t.gold_actions))


@pytest.mark.slow  # real embedded model: the opt-in tier CI also runs
def test_local_model_blueprint_passes_outcome():
    from trajforge.generators.llm.local import LOCAL_MODEL_NAME, LocalLLM

    domain = get_domain("retail")
    task = smallest_task(domain)
    provenance = Provenance(models={"blueprint": LOCAL_MODEL_NAME}, seeds={"blueprint": 1})
    trajectory = asyncio.run(
        run_blueprint(
            task,
            domain,
            LocalLLM(max_batch_size=32),
            model=LOCAL_MODEL_NAME,
            seed=1,
            provenance=provenance,
            sampling=SamplingParams(temperature=0.7, max_tokens=32),
            max_retries=0,
        )
    )
    result = verify_outcome(trajectory, domain)
    assert result.passed, result.reason
    stats = trajectory.verbalisation
    utterances = sum(
        m.role in ("user", "assistant") and m.content is not None for m in trajectory.messages
    )
    assert stats.model_written + stats.templated == utterances
    assert trajectory.cost.llm_calls == utterances
