"""The build's stage logic as plain functions over typed records (no Beam import).

Each takes the worker's `StageResources` and one element and returns the next record, or raises
`Rejected` with a typed reason. The Beam wrappers in pipelines/transforms route and count.
"""

from __future__ import annotations

import json

from trajforge.pipelines.resources import StageResources
from trajforge.schemas import (
    DatasetRecord,
    Provenance,
    Rejected,
    Task,
    Trajectory,
    derive_seed,
)


def _trajforge_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trajforge")
    except PackageNotFoundError:
        return "unknown"


TRAJFORGE_VERSION = _trajforge_version()


def synthesize_task(res: StageResources, index: int) -> Task:
    """Seed index -> persona -> a task grounded in the domain's seeded state."""
    from trajforge.generators.personas import sample_persona

    cfg = res.config
    persona = sample_persona(derive_seed(cfg.seed, index, "persona"))
    return res.domain.synthesize_task(persona, derive_seed(cfg.seed, index, "synthesize", 0))


def verify_task(res: StageResources, task: Task) -> Task:
    """Pre-rollout checks (gold runs clean, not already solved, no prefix suffices, ...)."""
    from trajforge.generators.task_verification import verify_task as verify

    return verify(res.domain, task)


def _provenance(res: StageResources, task: Task, seed: int) -> Provenance:
    assert res.clients is not None
    return Provenance(
        models=dict(res.clients.models),
        seeds={"build": res.config.seed, "generate": seed},
        config_hash=res.config.config_hash(),
        trajforge_version=TRAJFORGE_VERSION,
    )


async def generate_trajectory(res: StageResources, task: Task) -> Trajectory:
    """Rollout (live agent vs simulated user) or blueprint (gold skeleton, verbalised)."""
    cfg = res.config
    clients = res.clients
    assert clients is not None
    seed = derive_seed(task.id, cfg.mode, 0)
    provenance = _provenance(res, task, seed)
    if cfg.mode == "blueprint":
        from trajforge.generators.blueprint import run_blueprint

        return await run_blueprint(
            task,
            res.domain,
            clients.agent,
            model=clients.models["agent"],
            seed=seed,
            provenance=provenance,
            sampling=cfg.sampling,
            max_retries=cfg.blueprint.max_retries,
            verbalise=cfg.blueprint.verbalise,
        )
    from trajforge.generators.agent import LLMAgent, OracleAgent
    from trajforge.generators.rollout import run_rollout
    from trajforge.generators.user import LLMUser, ScriptedUser

    if cfg.rollout.agent == "oracle":
        agent = OracleAgent(task)
    else:
        agent = LLMAgent(clients.agent, clients.models["agent"], cfg.sampling)
    if cfg.rollout.user == "scripted":
        user = ScriptedUser(task)
    else:
        user = LLMUser(clients.user, clients.models["user"], task, cfg.sampling)
    return await run_rollout(
        task,
        res.domain,
        agent,
        user,
        max_turns=cfg.rollout.max_turns,
        max_steps=cfg.rollout.max_steps,
        seed=seed,
        provenance=provenance,
    )


class RejectedRecord(Rejected):
    """A rejection that carries the updated record (e.g. with its failed outcome attached)."""

    def __init__(self, reason, detail: str, record):
        super().__init__(reason, detail)
        self.record = record


def verify_outcome(res: StageResources, trajectory: Trajectory) -> Trajectory:
    """Attach the programmatic outcome; refuse trajectories that did not reach the gold state."""
    from trajforge.verifiers.outcome import rejection_reason
    from trajforge.verifiers.outcome import verify_outcome as verify

    outcome = verify(trajectory, res.domain)
    checked = trajectory.model_copy(update={"outcome": outcome})
    reason = rejection_reason(outcome)
    if reason is None:
        return checked
    raise RejectedRecord(reason, outcome.reason, checked)


def to_dataset_record(res: StageResources, trajectory: Trajectory) -> DatasetRecord:
    """The exported row: OpenAI-format messages and tools, plus what filtering needs. The split
    is assigned later, per leakage cluster, from `split_keys` (pipelines/splits.py)."""
    from trajforge.pipelines.splits import record_keys, template_id

    task = trajectory.task
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
        messages_json=json.dumps([m.openai_dict() for m in trajectory.messages], sort_keys=True),
        tools_json=json.dumps(
            [s.openai_schema() for s in res.domain.toolbox.specs], sort_keys=True
        ),
        num_turns=sum(1 for m in trajectory.messages if m.role == "user"),
        num_tool_calls=len(trajectory.steps),
        termination=trajectory.termination,
        outcome_passed=bool(trajectory.outcome and trajectory.outcome.passed),
        final_state_hash=trajectory.final_state_hash,
        judge_scores_json=json.dumps(judge_scores, sort_keys=True),
        trajectory_json=trajectory.to_json(),
        template_id=template_id(trajectory),
        split_keys=record_keys(trajectory, splits.group_by, splits.shared_entities),
    )


# ---------------------------------------------------------------------------------------------
# Quality layer: judges, shortcut-resistance filters (dedup lives in transforms/dedup.py)


async def no_tool_baseline_gate(res: StageResources, task: Task) -> Task:
    """Refuse read-only tasks a model answers without any tool (shortcut-prone)."""
    from trajforge.verifiers.no_tool_baseline import (
        check_shortcut_prone,
        is_read_only,
        no_tool_baseline,
    )

    if not is_read_only(task):  # a write task cannot succeed without tools
        return task
    assert res.clients is not None
    answer = await no_tool_baseline(
        task, res.clients.judge, res.clients.models["judge"], derive_seed(task.id, "baseline", 0)
    )
    check_shortcut_prone(task, answer).raise_if_rejected()
    return task


async def judge_trajectory(res: StageResources, trajectory: Trajectory) -> Trajectory:
    """Attach the multi-axis judgement; when gating, refuse low or ungradeable ones."""
    from trajforge.verifiers.judge import TrajectoryJudge, judge_gate

    stage_cfg = res.config.quality.judge
    assert res.clients is not None
    judge = TrajectoryJudge([res.clients.judge], [res.clients.models["judge"]], stage_cfg.settings)
    judgement = await judge.judge(
        trajectory, res.domain.policy, derive_seed(trajectory.id, "judge", 0)
    )
    judged = trajectory.model_copy(update={"judgements": (*trajectory.judgements, judgement)})
    verdict = judge_gate(judgement, stage_cfg.settings)
    if stage_cfg.gate and not verdict.passed:
        raise RejectedRecord(verdict.reason, verdict.detail, judged)
    return judged


def shortcut_filters(res: StageResources, trajectory: Trajectory) -> Trajectory:
    """Attach signatures, then run the enabled programmatic filters; the first failure rejects."""
    from trajforge.verifiers.hallucination import check_hallucinated_values
    from trajforge.verifiers.loops import check_loops
    from trajforge.verifiers.signatures import check_answer_before_evidence, compute_signatures
    from trajforge.verifiers.structural import check_agent_tool_calls, check_narrated_actions
    from trajforge.verifiers.user_fidelity import check_user_fidelity

    cfg = res.config.quality.shortcut
    signed = trajectory.model_copy(update={"signatures": compute_signatures(trajectory)})
    checks = [
        (cfg.structural, check_agent_tool_calls),
        (cfg.structural, check_narrated_actions),
        (cfg.answer_before_evidence, check_answer_before_evidence),
        (cfg.hallucinated_values, check_hallucinated_values),
        (cfg.loops, lambda t: check_loops(t, cfg.max_repeats)),
        (cfg.user_fidelity, check_user_fidelity),
    ]
    for enabled, check in checks:
        if enabled:
            verdict = check(signed)
            if not verdict.passed:
                raise RejectedRecord(verdict.reason, verdict.detail, signed)
    return signed


def diversity_json(trajectories: list[Trajectory], with_embeddings: bool) -> str:
    """Diversity of the kept set for the manifest: Vendi score (when the embedder is enabled),
    coverage of persona traits, task types, complexity and tools, and the prior-shortcut rate."""
    from trajforge.generators.domains import get_domain
    from trajforge.verifiers.diversity import diversity_report
    from trajforge.verifiers.signatures import prior_shortcut_rate

    trajectories = sorted(trajectories, key=lambda t: t.id)
    embeddings = None
    if with_embeddings and len(trajectories) > 1:
        from trajforge.pipelines.transforms.dedup import dedup_text
        from trajforge.verifiers.semantic import embed

        embeddings = embed([dedup_text(t) for t in trajectories])
    tool_names = sorted(
        {s.name for d in {t.task.domain for t in trajectories} for s in get_domain(d).toolbox.specs}
    )
    report = diversity_report(trajectories, embeddings=embeddings, tool_names=tool_names)
    signatures = [t.signatures for t in trajectories if t.signatures is not None]
    out = report.model_dump(mode="json")
    out["prior_shortcut_rate"] = prior_shortcut_rate(signatures) if signatures else None
    return json.dumps(out, sort_keys=True)
