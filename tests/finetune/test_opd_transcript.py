"""The token-id invariant across a multi-turn rollout with tool results and user turns."""

import asyncio

import torch

from tests.finetune.opd_models import renderer, tiny_pair, toy_tokenizer
from tests.toy_domain import TOY, make_task
from trajforge.finetune.opd.guided import GuidedSchedule
from trajforge.finetune.opd.objective import gather_logprobs
from trajforge.finetune.opd.sampling import TokenAgent, TransformersSampler
from trajforge.finetune.opd.transcript import TokenTranscript
from trajforge.generators.agent import SampledTokens
from trajforge.generators.rollout import run_rollout
from trajforge.generators.user import ScriptedUser
from trajforge.schemas import Provenance

AGENT_TEXTS = [
    '<tool_call>{"name": "get_account", "arguments": {"account_id": "#A1001"}}</tool_call>',
    '<tool_call>{"name": "deposit", "arguments": {"account_id": "#A9999", "amount": 5}}</tool_call>',
    "Which email is on the account? Please provide it.",
    '<tool_call>{"name": "deposit", "arguments": {"account_id": "#A1001", "amount": 25.5}}</tool_call>',
    "Your balance is now 125.50. Your request has been completed.",
]


class CharacterSampler:
    """Emits fixed texts one character per token (a tokenization the tokenizer itself would
    never produce), scored by a real model: re-encoding would visibly change the ids."""

    def __init__(self, model, tokenizer, texts):
        self.model, self.tokenizer, self.texts = model, tokenizer, list(texts)
        self.end = tokenizer(tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        self.prompts, self.emitted = [], []

    def sample(self, prompt_ids, seed):
        text = self.texts[len(self.emitted)]
        ids = [i for ch in text for i in self.tokenizer(ch, add_special_tokens=False)["input_ids"]]
        ids += self.end
        full = torch.tensor([list(prompt_ids) + ids])
        with torch.no_grad():
            logp = gather_logprobs(self.model(input_ids=full).logits, full)[0, len(prompt_ids) :]
        self.prompts.append(list(prompt_ids))
        self.emitted.append(ids)
        return SampledTokens(tuple(ids), tuple(float(x) for x in logp))


def run(agent, transcript, task, max_turns=10):
    return asyncio.run(
        run_rollout(
            task,
            TOY,
            agent,
            ScriptedUser(task),
            seed=3,
            max_turns=max_turns,
            provenance=Provenance(models={}, seeds={}),
            observer=transcript,
        )
    )


def test_sampled_ids_are_carried_forward_across_tools_and_user_turns():
    tokenizer = toy_tokenizer()
    student, _ = tiny_pair()
    task = make_task()
    transcript = TokenTranscript(renderer(), TOY.toolbox.specs)
    sampler = CharacterSampler(student, tokenizer, AGENT_TEXTS)
    trajectory = run(TokenAgent(transcript, tokenizer, sampler), transcript, task)
    tokens = transcript.finish()

    roles = [m.role for m in trajectory.messages]
    assert trajectory.termination == "user_stop" and roles.count("tool") == 3
    assert roles.count("user") >= 3 and trajectory.final_state_hash == task.gold_final_hash

    ids = list(tokens.input_ids)
    trained = [i for i, m in zip(ids, tokens.mask, strict=True) if m]
    assert trained == [i for emitted in sampler.emitted for i in emitted]
    for text, emitted in zip(AGENT_TEXTS, sampler.emitted, strict=True):
        assert (
            emitted != tokenizer(text + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        )
    for prompt in sampler.prompts:  # every generation prompt is a prefix of the final sequence
        assert ids[: len(prompt)] == prompt
    assert len(set(map(len, sampler.prompts))) == len(AGENT_TEXTS)

    turn_of = [t for t, m in zip(tokens.turn_ids, tokens.mask, strict=True) if m]
    assert sorted(set(turn_of)) == list(range(len(AGENT_TEXTS)))
    assert all(t == -1 for t, m in zip(tokens.turn_ids, tokens.mask, strict=True) if not m)
    assert tokens.feedback_error == (False, True, False, False, False)
    logps = [lp for lp, m in zip(tokens.sampled_logprobs, tokens.mask, strict=True) if m]
    assert all(lp < 0 for lp in logps)

    text = tokenizer.decode(ids)
    for message in trajectory.messages:
        if message.role in ("user", "tool"):
            assert message.content in text


def test_guided_teacher_turns_are_context_without_loss():
    tokenizer = toy_tokenizer()
    student, teacher = tiny_pair()
    task = make_task()
    transcript = TokenTranscript(renderer(), TOY.toolbox.specs)
    stop = tokenizer(tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    teacher_sampler = CharacterSampler(teacher, tokenizer, AGENT_TEXTS)
    agent = TokenAgent(
        transcript,
        tokenizer,
        TransformersSampler(student, stop, max_new_tokens=8),
        teacher=teacher_sampler,
        guided=GuidedSchedule(start_p=1.0, end_step=10),
        step=0,
        record_id=task.id,
    )
    run(agent, transcript, task)
    tokens = transcript.finish()
    assert tokens.teacher_turns == len(teacher_sampler.emitted) > 0
    assert sum(tokens.mask) == 0  # every turn was the teacher's: nothing to train


def test_student_sampling_is_reproducible_and_masks_only_its_tokens():
    tokenizer = toy_tokenizer()
    student, _ = tiny_pair()
    stop = tokenizer(tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    outs = []
    for _ in range(2):
        transcript = TokenTranscript(renderer(), TOY.toolbox.specs)
        sampler = TransformersSampler(student, stop, max_new_tokens=6)
        run(TokenAgent(transcript, tokenizer, sampler), transcript, make_task(), max_turns=2)
        outs.append(transcript.finish())
    assert outs[0] == outs[1]
    assert 0 < sum(outs[0].mask) <= 2 * 2 * 6  # at most max_turns x empty retries x tokens
