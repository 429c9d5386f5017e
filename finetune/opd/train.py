"""`trajforge finetune opd`: multi-turn on-policy distillation, one loop top to bottom.

    per step: the student samples `rollouts_per_step` rollouts in the environments (Guided: the
    teacher takes some turns) -> the teacher scores each rollout once -> Selective gate/weights
    -> OPD loss on student tokens, N = the step's trained tokens -> clip, AdamW
    -> metrics.jsonl; every `eval_every` steps (and before and after): held-out reverse KL on
    fresh student rollouts, and pass^k through `trajforge eval`'s `evaluate`
    -> checkpoints (weights, optimizer, step); the final student in OUTPUT/model

Everything random is seeded from (task id, stage, step, index), so a resumed run samples the
same rollouts it would have sampled without the interruption.

With `sampler: vllm` the student samples in a vLLM engine, which is synced with the student's
weights after every step and after a resume; log p_old is then recomputed by the student's own
forward pass (the update's computation, same autocast), because the engine's log-probs come
from another implementation in another dtype and their gap would bias the ratio
`exp(logp_theta - logp_old)` (the gap is logged as `sampler_logprob_gap`). A Guided teacher
always samples with its one transformers copy, the copy that scores: never a second engine.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict

from trajforge.finetune.agents import parse_agent
from trajforge.finetune.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trajforge.finetune.evaluate import (
    EvalConfig,
    SplitTasks,
    evaluate,
    fresh_tasks,
    held_out_tasks,
    read_split,
)
from trajforge.finetune.families import TemplateFamily, resolve_family
from trajforge.finetune.modeling import (
    Precision,
    inference_dtype,
    pick_device,
    resolve_precision,
    save_final,
)
from trajforge.finetune.opd.config import OPDConfig
from trajforge.finetune.opd.rollouts import RolloutSetup, sample_rollouts, step_jobs
from trajforge.finetune.opd.sampling import TokenSampler, TransformersSampler
from trajforge.finetune.opd.scoring import (
    ScoredRollout,
    accumulate_update,
    heldout_reverse_kl,
    sampler_gap,
    score_rollout,
    step_weights,
)
from trajforge.finetune.opd.transcript import FamilyRenderer, RolloutTokens
from trajforge.finetune.opd.vllm_sampler import VLLMSampler
from trajforge.generators.domains import get_domain
from trajforge.generators.llm import build_client, model_name
from trajforge.generators.tooling import Domain
from trajforge.generators.user import LLMUser, ScriptedUser, UserSimulator
from trajforge.schemas import Task
from trajforge.verifiers.outcome import verify_outcome

METRICS_FILE = "metrics.jsonl"


class OPDMetrics(BaseModel):
    """One line of metrics.jsonl: a training step, or an evaluation (`heldout_reverse_kl`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int
    loss: float | None = None
    sampled_reverse_kl: float | None = None  # mean log p_old - log p_teacher, student tokens
    sampler_logprob_gap: float | None = None  # mean |log p_sampler - log p_old| (vLLM only)
    trained_tokens: int | None = None
    tokens: int | None = None
    rollouts: int | None = None
    dropped: dict[str, int] | None = None  # rollouts dropped, by typed reason
    student_turns: int | None = None
    turns_trained: int | None = None  # Selective: turns the gate kept
    teacher_turns: int | None = None  # Guided
    guided_p: float | None = None
    outcome_pass_rate: float | None = None
    heldout_reverse_kl: float | None = None
    eval_pass_hat_1: float | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class OPDResult:
    output: Path
    model_dir: Path
    steps: int
    heldout_kl_before: float
    heldout_kl_after: float


@dataclass
class Models:
    student: Any
    teacher: Any
    tokenizer: Any
    device: str
    precision: Precision
    family: TemplateFamily

    @property
    def vocab_size(self) -> int:
        """The tokenizer's vocabulary: logits are compared over it (embedding padding cut)."""
        return len(self.tokenizer)


def load_models(cfg: OPDConfig) -> Models:
    """Student (trainable) and teacher (frozen) that must share one tokenizer, each loaded in
    the dtype `precision` gives (transformers 5 would otherwise load a checkpoint's own dtype:
    a bf16 student trained in pure bf16, whose updates mostly round away). The family is
    resolved from the student's tokenizer first, so a wrong one fails before any weights load."""
    # lazy, measured start-up cost: transformers ~440 ms
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = pick_device() if cfg.device == "auto" else cfg.device
    tokenizer = AutoTokenizer.from_pretrained(cfg.student)
    family = resolve_family(tokenizer, cfg.family, cfg.student)
    teacher_vocab = AutoTokenizer.from_pretrained(cfg.teacher).get_vocab()
    if teacher_vocab != tokenizer.get_vocab():
        raise ValueError(
            "teacher: its tokenizer differs from the student's; OPD scores the student's exact "
            "token ids, so pick a teacher of the same family and vocabulary"
        )
    precision = resolve_precision(cfg.precision, device, "full")
    student = AutoModelForCausalLM.from_pretrained(cfg.student, dtype=precision.load_dtype)
    teacher = AutoModelForCausalLM.from_pretrained(cfg.teacher, dtype=inference_dtype(precision))
    for name, model in (("student", student), ("teacher", teacher)):
        rows = model.get_output_embeddings().weight.shape[0]
        if rows < len(tokenizer):
            raise ValueError(
                f"{name}: its output layer has {rows} rows for a tokenizer of {len(tokenizer)} "
                "tokens; give a model whose embeddings cover the tokenizer (padding is fine)"
            )
    teacher.to(device).eval()
    teacher.requires_grad_(False)
    return Models(student.to(device), teacher, tokenizer, device, precision, family)


def make_sampler(cfg: OPDConfig, models: Models, stop_ids: list[int]) -> TokenSampler:
    """The student's configured sampler (vLLM is imported only when asked for); a
    transformers sampler runs under the training forward's precision, so its log p_old is
    what the update's first forward computes."""
    if cfg.sampler == "vllm":
        return VLLMSampler(
            cfg.student,
            stop_ids,
            cfg.max_new_tokens,
            cfg.temperature,
            vocab_size=models.vocab_size,
        )
    return transformers_sampler(cfg, models, models.student, stop_ids)


def transformers_sampler(
    cfg: OPDConfig, models: Models, model: Any, stop_ids: list[int]
) -> TransformersSampler:
    """Sampling from an already loaded model (the student, or the Guided teacher: the copy
    that scores also takes the teacher's turns, so it is on the device once)."""
    return TransformersSampler(
        model, stop_ids, cfg.max_new_tokens, cfg.temperature, models.precision, models.vocab_size
    )


def user_factory(cfg: OPDConfig, domain: Domain) -> Callable[[Task], UserSimulator]:
    """The simulated user of every rollout: scripted, or an LLM user on the configured backend
    (one client, with its cache and accounting, shared by all rollouts) speaking in the
    domain's words."""
    if cfg.user is None:
        return ScriptedUser

    client = build_client(cfg.user)
    name = model_name(cfg.user)
    return lambda task: LLMUser(client, name, task, vocabulary=domain.vocabulary)


class OPDTrainer:
    """The loop's state: models, samplers, optimizer, tasks; `run()` trains."""

    def __init__(self, cfg: OPDConfig, models: Models, domain: Domain, tasks, heldout):

        if not tasks:
            raise ValueError("OPD needs at least one training task")
        self.cfg, self.models, self.domain = cfg, models, domain
        self.tasks: list[Task] = list(tasks)
        self.heldout: list[Task] = list(heldout) or self.tasks
        self.output = Path(cfg.output)
        self.family = models.family
        self.renderer = FamilyRenderer(models.tokenizer, self.family)
        stop = self.renderer.encode(self.family.end_of_turn)
        self.student_sampler = make_sampler(cfg, models, stop)
        self.teacher_sampler = (
            transformers_sampler(cfg, models, models.teacher, stop) if cfg.guided else None
        )
        # the engine's log-probs are not the trained forward's: recompute log p_old
        self.recompute_old = cfg.sampler == "vllm"
        self.user_factory = user_factory(cfg, domain)
        self.optimizer = torch.optim.AdamW(models.student.parameters(), lr=cfg.learning_rate)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda _: 1.0)
        self.started = time.perf_counter()

    def setup(self, *, guided: bool = True) -> RolloutSetup:
        """What every rollout shares; without `guided`, the student takes every turn."""
        return RolloutSetup(
            domain=self.domain,
            renderer=self.renderer,
            tokenizer=self.models.tokenizer,
            student=self.student_sampler,
            teacher=self.teacher_sampler if guided else None,
            guided=self.cfg.guided if guided else None,
            max_turns=self.cfg.max_turns,
            max_tool_steps=self.cfg.max_tool_steps,
            user_factory=self.user_factory,
        )

    def train_step(self, step: int) -> OPDMetrics:
        """Sample, score once, update: one optimizer step."""

        cfg, m = self.cfg, self.models
        sampled = sample_rollouts(
            step_jobs(self.tasks, step, cfg.rollouts_per_step, "opd"), self.setup()
        )
        scored = self.score([r.tokens for r in sampled.rollouts])
        self.optimizer.zero_grad(set_to_none=True)
        weights = step_weights(scored, cfg.selective)
        loss = accumulate_update(m.student, scored, weights, m.precision, m.vocab_size)
        if cfg.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(m.student.parameters(), cfg.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.student_sampler.sync(m.student)
        student_tokens = sum(sum(r.tokens.mask) for r in sampled.rollouts)
        kl_sum = sum(
            float(((s.old_logprobs - s.teacher_logprobs) * s.sampled_mask()).sum()) for s in scored
        )
        passed = [verify_outcome(r.trajectory, self.domain).passed for r in sampled.rollouts]
        return OPDMetrics(
            step=step + 1,
            loss=loss,
            sampled_reverse_kl=kl_sum / student_tokens if student_tokens else 0.0,
            sampler_logprob_gap=sampler_gap(scored) if self.recompute_old else None,
            trained_tokens=int(sum(int(s.mask.sum()) for s in scored)),
            tokens=sum(len(r.tokens.input_ids) for r in sampled.rollouts),
            rollouts=len(sampled.rollouts),
            dropped=dict(sampled.dropped),
            student_turns=sum(s.turns for s in scored),
            turns_trained=sum(s.turns_kept for s in scored),
            teacher_turns=sum(r.tokens.teacher_turns for r in sampled.rollouts),
            guided_p=cfg.guided.probability(step) if cfg.guided else None,
            outcome_pass_rate=sum(passed) / len(passed) if passed else None,
            elapsed_s=round(time.perf_counter() - self.started, 3),
        )

    def score(self, rollouts: list[RolloutTokens]) -> list[ScoredRollout]:
        """The teacher's scores of each rollout, with log p_old recomputed by the student
        when the sampler is not the trained model (vLLM)."""
        m, cfg = self.models, self.cfg
        student = m.student if self.recompute_old else None
        return [
            score_rollout(
                m.teacher,
                tokens,
                m.device,
                cfg.selective,
                m.vocab_size,
                student=student,
                precision=m.precision,
            )
            for tokens in rollouts
        ]

    def heldout_kl(self) -> float:
        """Reverse KL on rollouts the current student samples on held-out tasks (same seeds
        at every evaluation, so successive values are comparable)."""
        jobs = step_jobs(self.heldout, 0, self.cfg.eval_rollouts, "opd-heldout")
        rollouts = [r.tokens for r in sample_rollouts(jobs, self.setup(guided=False)).rollouts]
        m = self.models
        return heldout_reverse_kl(
            m.student, m.teacher, rollouts, m.device, m.precision, m.vocab_size
        )

    def evaluate(self, step: int) -> OPDMetrics:
        kl = self.heldout_kl()
        pass_hat_1 = self._pass_hat_1(step) if self.cfg.eval_pass_k else None
        elapsed = round(time.perf_counter() - self.started, 3)
        return OPDMetrics(
            step=step, heldout_reverse_kl=kl, eval_pass_hat_1=pass_hat_1, elapsed_s=elapsed
        )

    def _pass_hat_1(self, step: int) -> float:
        """The student's pass^1 on held-out tasks through `trajforge eval`'s evaluation."""

        path = save_final(
            self.models.student,
            self.models.tokenizer,
            self.output / "eval" / f"step-{step}",
            self.family.name,
            self.models.precision.save_dtype(self.cfg.student),
        )
        cfg = EvalConfig(
            domain=self.domain.name,
            num_tasks=len(self.heldout),
            k=1,
            max_turns=self.cfg.max_turns,
            max_steps=self.cfg.max_tool_steps,
            max_in_flight=1,
            max_tokens=self.cfg.max_new_tokens,
            family=self.family.name,
        )
        report = evaluate(cfg, parse_agent(str(path)), self.heldout, self.domain)
        return report.overall.pass_hat.get(1, 0.0)

    def write(self, metrics: OPDMetrics) -> None:
        with (self.output / METRICS_FILE).open("a") as f:
            f.write(json.dumps(metrics.model_dump(exclude_none=True)) + "\n")

    def run(self) -> OPDResult:
        cfg = self.cfg
        self.output.mkdir(parents=True, exist_ok=True)
        start = self._resume()
        before = self.evaluate(start)
        self.write(before)
        for step in range(start, cfg.steps):
            self.write(self.train_step(step))
            done = step + 1
            if cfg.eval_every and done % cfg.eval_every == 0 and done < cfg.steps:
                self.write(self.evaluate(done))
            if cfg.save_every and done % cfg.save_every == 0:
                save_checkpoint(
                    self.output, done, self.models.student, self.optimizer, self.scheduler
                )
        after = self.evaluate(cfg.steps)
        self.write(after)
        save_checkpoint(self.output, cfg.steps, self.models.student, self.optimizer, self.scheduler)
        model_dir = save_final(
            self.models.student,
            self.models.tokenizer,
            self.output,
            self.family.name,
            self.models.precision.save_dtype(self.cfg.student),
        )
        return OPDResult(
            self.output,
            model_dir,
            cfg.steps - start,
            before.heldout_reverse_kl or 0.0,
            after.heldout_reverse_kl or 0.0,
        )

    def _resume(self) -> int:
        """The step to start from: 0, or the latest checkpoint's with `resume`."""
        checkpoint = latest_checkpoint(self.output)
        if not self.cfg.resume:
            if checkpoint or (self.output / METRICS_FILE).exists():
                raise FileExistsError(
                    f"{self.output} holds a previous run; pass --resume or a new --output"
                )
            return 0
        if checkpoint is None:
            return 0
        step = load_checkpoint(checkpoint, self.models.student, self.optimizer, self.scheduler)
        # an engine loaded the student's directory (the weights before training): give it the
        # checkpoint's, or the first rollouts after a resume are off-policy
        self.student_sampler.sync(self.models.student)
        return step


def training_tasks(cfg: OPDConfig) -> SplitTasks:
    """The domain and the tasks OPD trains on: exactly a run's `split` (train by default, never
    golden for train), read once, in the domain its tasks carry; or fresh verified tasks of
    `domain` from OPD's own seeds."""
    if cfg.tasks is not None:
        return read_split(cfg.tasks, cfg.split)
    domain = get_domain(cfg.domain)
    return SplitTasks(
        domain=domain, tasks=tuple(fresh_tasks(domain, "opd", cfg.seed, cfg.num_tasks)[0])
    )


def run_opd(cfg: OPDConfig) -> OPDResult:
    """Load models and tasks as configured and train (resumable with `resume=True`)."""
    return opd_trainer(cfg).run()


def measure_heldout_kl(cfg: OPDConfig) -> float:
    """The student's held-out reverse KL to the teacher, without training: the value a run
    logs before its first step (the same held-out rollouts), so a student trained some other
    way (e.g. more SFT) can be compared with an OPD-trained one."""
    return opd_trainer(cfg).heldout_kl()


def opd_trainer(cfg: OPDConfig) -> OPDTrainer:
    """Models, training tasks and held-out tasks loaded as configured, seeded."""
    torch.manual_seed(cfg.seed)
    train = training_tasks(cfg)
    heldout, _ = held_out_tasks(
        EvalConfig(tasks=cfg.tasks, domain=cfg.domain, num_tasks=cfg.eval_tasks, seed=cfg.seed),
        train.domain,
    )
    return OPDTrainer(cfg, load_models(cfg), train.domain, list(train.tasks), heldout)
