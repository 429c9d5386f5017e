"""The build's stage logic as plain functions over typed records (no Beam import).

Each takes the worker's `StageResources` and one element and returns the next record, or raises
`Rejected` with a typed reason. The Beam wrappers in pipelines/transforms route and count.
"""

from __future__ import annotations

import dataclasses
import json
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from trajforge.generators import task_verification
from trajforge.generators.blueprint import run_blueprint
from trajforge.generators.noisy_teacher import NoisyTeacher
from trajforge.generators.personas import sample_persona
from trajforge.generators.prompts import strip_control_tokens
from trajforge.generators.rollout import run_rollout
from trajforge.pipelines.resources import StageResources
from trajforge.pipelines.splits import record_keys, template_id
from trajforge.schemas import (
    DatasetRecord,
    Message,
    Provenance,
    Rejected,
    Task,
    Trajectory,
    derive_seed,
)
from trajforge.schemas.sanitize import find_control_token
from trajforge.verifiers.injection import scan_messages
from trajforge.verifiers.no_tool_baseline import (
    check_shortcut_prone,
    is_read_only,
    no_tool_baseline,
)
from trajforge.verifiers.outcome import judge_outcome
from trajforge.verifiers.protocol import FilterContext, TrajectoryFilter, run_filter
from trajforge.verifiers.signatures import compute_signatures, scan_shortcuts

if TYPE_CHECKING:
    from trajforge.pipelines.attempts import TaskAttempt


def _trajforge_version() -> str:
    try:
        return version("trajforge")
    except PackageNotFoundError:
        return "unknown"


TRAJFORGE_VERSION = _trajforge_version()


def synthesize_task(res: StageResources, index: int) -> Task:
    """Seed index -> its domain (drawn by weight in a mixed build) -> persona -> a task grounded
    in that domain's seeded state."""
    cfg = res.config
    domain = res.domain_for(cfg.domain_of(index))
    persona = sample_persona(derive_seed(cfg.seed, index, "persona"))
    return domain.synthesize_task(persona, derive_seed(cfg.seed, index, "synthesize", 0))


def verify_task(res: StageResources, task: Task) -> Task:
    """Pre-rollout checks (gold runs clean, not already solved, no prefix suffices, ...)."""
    return task_verification.verify_task(res.domain_for(task.domain), task)


def _provenance(res: StageResources, task: Task, seed: int, attempt: int | None) -> Provenance:
    assert res.clients is not None
    seeds = {"build": res.config.seed, "generate": seed}
    if attempt is not None:
        seeds["attempt"] = attempt
    return Provenance(
        models=dict(res.clients.models),
        seeds=seeds,
        config_hash=res.config_hash,
        trajforge_version=TRAJFORGE_VERSION,
    )


async def generate_trajectory(res: StageResources, task: Task) -> Trajectory:
    """Rollout (live agent vs simulated user) or blueprint (gold skeleton, verbalised)."""
    return await _generate(res, task, 0, None)


async def generate_attempt(res: StageResources, attempt: TaskAttempt) -> Trajectory:
    """One of `rollout.attempts` rollouts of a task: its own seed, its index in provenance."""
    return await _generate(res, attempt.task, attempt.attempt, attempt.attempt)


async def _generate(
    res: StageResources, task: Task, attempt: int, recorded: int | None
) -> Trajectory:
    """One generation path: `attempt` picks the seed (attempt 0 is the build without
    attempts), `recorded` goes into the provenance only in attempt builds, so K=1 builds
    produce the same trajectories as before."""
    cfg = res.config
    clients = res.clients
    assert clients is not None
    seed = derive_seed(task.id, cfg.mode, attempt)
    provenance = _provenance(res, task, seed, recorded)
    domain = res.domain_for(task.domain)
    if cfg.mode == "blueprint":
        return await run_blueprint(
            task,
            domain,
            clients.agent,
            model=clients.models["agent"],
            seed=seed,
            provenance=provenance,
            sampling=cfg.sampling,
            max_retries=cfg.blueprint.max_retries,
            verbalise=cfg.blueprint.verbalise,
        )

    assert res.roles is not None
    agent = res.roles.agent_for(task, domain, attempt)
    trajectory = await run_rollout(
        task,
        domain,
        agent,
        res.roles.user_for(task, domain),
        max_turns=cfg.rollout.max_turns,
        max_steps=cfg.rollout.max_steps,
        seed=seed,
        provenance=provenance,
    )
    return with_injected_faults(trajectory, agent)


def with_injected_faults(trajectory: Trajectory, agent: object) -> Trajectory:
    """A noisy teacher's faults, recorded in the trajectory's provenance (not in its id)."""
    if not isinstance(agent, NoisyTeacher) or not agent.injected_faults:
        return trajectory
    faults = tuple(agent.injected_faults)
    provenance = trajectory.provenance.model_copy(update={"injected_faults": faults})
    return trajectory.model_copy(update={"provenance": provenance})


class RejectedRecord(Rejected):
    """A rejection that carries the updated record (e.g. with its failed outcome attached)."""

    def __init__(self, reason, detail: str, record, filter_name: str | None = None):
        super().__init__(reason, detail, filter_name)
        self.record = record


def gate(
    res: StageResources,
    flt: TrajectoryFilter,
    trajectory: Trajectory,
    context: FilterContext | None = None,
) -> Trajectory:
    """Pass `trajectory` through one filter (`context`: the domain's, unless the caller made
    one for this trajectory); a rejection keeps the record it judged."""
    assert res.gates is not None
    context = context or res.context_for(trajectory.task.domain)
    verdict = run_filter(flt, trajectory, context)
    if not verdict.passed:
        raise RejectedRecord(verdict.reason, verdict.detail, trajectory, flt.name)
    return trajectory


def verify_outcome(res: StageResources, trajectory: Trajectory) -> Trajectory:
    """Attach the programmatic outcome; refuse trajectories that did not reach the gold state
    with the typed reason the judging decided (a passing one still meets the domain's checks
    that extend the outcome gate)."""
    outcome, rejection = judge_outcome(trajectory, res.domain_for(trajectory.task.domain))
    judged = trajectory.model_copy(update={"outcome": outcome})
    if rejection is not None:
        raise RejectedRecord(rejection, outcome.reason, judged, res.gates.outcome.name)
    return gate(res, res.gates.outcome, judged)


def _exported(message: Message) -> dict:
    """A training message: OpenAI shape, simulator control tokens stripped from the text."""
    out = message.openai_dict()
    out["content"] = strip_control_tokens(out["content"])
    return out


def exported_messages(trajectory: Trajectory) -> list[dict]:
    """The messages as exported (`messages_json`): what two attempts are compared by."""
    return [_exported(m) for m in trajectory.messages]


def _difficulty_columns(trajectory: Trajectory) -> dict:
    """attempts, successes, pass_rate, pass_hat_k: unmeasured (0, 0, None, ()) without K > 1."""
    d = trajectory.difficulty
    if d is None:
        return {}
    return {
        "attempts": d.attempts,
        "successes": d.successes,
        "pass_rate": d.pass_rate,
        "pass_hat_k": d.pass_hat_k,
    }


def to_dataset_record(res: StageResources, trajectory: Trajectory) -> DatasetRecord:
    """The exported row: OpenAI-format messages and tools, plus what filtering needs. The split
    is assigned later, per leakage cluster, from `split_keys` (pipelines/splits.py)."""
    task = trajectory.task
    trajectory_json = trajectory.to_json()  # once: the control-token check reads it too
    leaked = find_control_token(trajectory_json)
    if leaked is not None:  # the schema boundary should make this impossible: never export it
        raise Rejected("control_token", f"control token {leaked!r} in the trajectory")
    injected = scan_messages((m.role, m.content) for m in trajectory.messages)
    if injected is not None:  # instructions addressed to the model inside user or tool text
        raise Rejected(
            "prompt_injection", f"{injected.kind} in {injected.role} text: {injected.excerpt!r}"
        )
    splits = res.config.output.splits
    judge_scores = {f"{j.judge}/{a.axis}": a.score for j in trajectory.judgements for a in j.axes}
    return DatasetRecord(
        id=trajectory.id,
        split="train",
        domain=task.domain,
        task_id=task.id,
        task_types=tuple(task.intent.task_types),
        complexity=task.intent.complexity,
        persona_id=task.persona.id,
        mode=trajectory.mode,
        messages_json=json.dumps(exported_messages(trajectory), sort_keys=True),
        tools_json=res.tools_json_for(task.domain),
        num_turns=sum(1 for m in trajectory.messages if m.role == "user"),
        num_tool_calls=len(trajectory.steps),
        termination=trajectory.termination,
        outcome_passed=bool(trajectory.outcome and trajectory.outcome.passed),
        final_state_hash=trajectory.final_state_hash,
        judge_scores_json=json.dumps(judge_scores, sort_keys=True),
        trajectory_json=trajectory_json,
        template_id=template_id(trajectory),
        split_keys=record_keys(trajectory, splits.group_by, splits.shared_entities),
        **_difficulty_columns(trajectory),
    )


# ---------------------------------------------------------------------------------------------
# Quality layer: judges, shortcut-resistance filters (dedup lives in transforms/dedup.py)


async def no_tool_baseline_gate(res: StageResources, task: Task) -> Task:
    """Refuse read-only tasks a model answers without any tool (shortcut-prone)."""
    vocabulary = res.domain_for(task.domain).vocabulary
    if not is_read_only(task, vocabulary):  # a write task cannot succeed without tools
        return task
    assert res.clients is not None
    seed = derive_seed(task.id, "baseline", 0)
    client, model = res.clients.baseline, res.clients.models["judge"]
    max_tokens = res.config.quality.shortcut.baseline_max_tokens
    answer = await no_tool_baseline(task, client, model, seed, vocabulary, max_tokens)
    check_shortcut_prone(task, answer, vocabulary).raise_if_rejected()
    return task


async def judge_trajectory(res: StageResources, trajectory: Trajectory) -> Trajectory:
    """Attach the multi-axis judgement; when gating, refuse low or ungradeable ones."""
    assert res.roles is not None and res.gates is not None
    judgement = await res.roles.judge.judge(
        trajectory,
        res.domain_for(trajectory.task.domain).policy,
        derive_seed(trajectory.id, "judge", 0),
    )
    judged = trajectory.model_copy(update={"judgements": (*trajectory.judgements, judgement)})
    if not res.config.quality.judge.gate:
        return judged
    return gate(res, res.gates.judge, judged)


def shortcut_filters(res: StageResources, trajectory: Trajectory) -> Trajectory:
    """Attach signatures, then run `quality.filters` in order; the first failure rejects.
    The shortcut scan is made once and handed to the filters with the context."""
    assert res.gates is not None
    scan = scan_shortcuts(trajectory)
    signed = trajectory.model_copy(update={"signatures": compute_signatures(trajectory, scan=scan)})
    context = dataclasses.replace(res.context_for(trajectory.task.domain), scan=scan)
    for flt in res.gates.filters:
        gate(res, flt, signed, context)
    return signed
