"""The vLLM paths of OPD and evaluation, run on CPU against tests/finetune/fake_vllm.py.

Each test fails if the path regresses: the engine re-synced after `--resume`, log p_old from
the student's own forward (not the engine's bf16 log-probs), one copy of the Guided teacher,
and `eval --model vllm:PATH` prompting with the pinned family template.
"""

from __future__ import annotations

import sys

import pytest
import torch

from tests.finetune.conftest import rendered_corpus
from tests.finetune.fake_vllm import fake_vllm_module
from tests.finetune.opd_models import save_pair
from tests.finetune.test_opd_train import TINY, trainer
from tests.toy_domain import TOY
from trajforge.finetune.families import get_family
from trajforge.finetune.opd.guided import GuidedSchedule
from trajforge.finetune.opd.objective import gather_logprobs
from trajforge.finetune.opd.rollouts import sample_rollouts, step_jobs
from trajforge.finetune.opd.sampling import TransformersSampler
from trajforge.finetune.render import generation_prompt
from trajforge.finetune.tiny import save_tiny
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.prompts import agent_system_prompt
from trajforge.schemas import ChatRequest, Message, SamplingParams

VLLM = {**TINY, "sampler": "vllm"}


@pytest.fixture
def fake_vllm(monkeypatch):
    module = fake_vllm_module()
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_the_engine_gets_the_checkpoint_weights_on_resume(tmp_path, fake_vllm):
    student, teacher = save_pair(tmp_path)
    first = trainer(tmp_path, student, teacher, **VLLM, steps=1, learning_rate=1e-2)
    first.run()  # one step, checkpointed at the end
    trained = {k: v.to(torch.bfloat16) for k, v in first.models.student.state_dict().items()}
    resumed = trainer(tmp_path, student, teacher, **VLLM, steps=1, resume=True)
    engine = fake_vllm.engines[-1]
    assert not torch.equal(engine.weights["lm_head.weight"], trained["lm_head.weight"])
    resumed.run()  # nothing left to train: only the resume can have synced the engine
    for name, value in trained.items():
        assert torch.equal(engine.weights[name], value), name
    assert engine.prefix_cache_resets >= 1


def test_log_p_old_is_the_students_own_forward_not_the_engines(tmp_path, fake_vllm):
    student, teacher = save_pair(tmp_path)
    t = trainer(tmp_path, student, teacher, **{**VLLM, "max_new_tokens": 8}, steps=1)
    (rollout,) = sample_rollouts(step_jobs(t.tasks, 0, 1, "opd"), t.setup()).rollouts
    (scored,) = t.score([rollout.tokens])
    mask = scored.sampled_mask().bool()
    assert mask.sum() > 0
    with torch.no_grad():
        own = gather_logprobs(t.models.student(input_ids=scored.input_ids).logits, scored.input_ids)
    engine = torch.tensor([rollout.tokens.sampled_logprobs])
    assert torch.allclose(scored.old_logprobs[mask], own[mask], atol=1e-5)
    assert (engine[mask] - own[mask]).abs().max() > 1e-3  # the bf16 engine's are not those
    metrics = t.train_step(0)
    assert metrics.sampler_logprob_gap > 0
    vocab = len(t.models.tokenizer)  # the engine never samples an embedding padding row
    assert fake_vllm.engines[0].params[-1].allowed_token_ids == list(range(vocab))


def test_the_guided_teacher_is_loaded_once(tmp_path, fake_vllm):
    student, teacher = save_pair(tmp_path)
    guided = GuidedSchedule(start_p=1.0, end_step=1)
    t = trainer(tmp_path, student, teacher, **VLLM, steps=1, guided=guided)
    assert [engine.model for engine in fake_vllm.engines] == [student]  # no teacher engine
    assert isinstance(t.teacher_sampler, TransformersSampler)
    assert t.teacher_sampler.model is t.models.teacher  # the copy that scores
    assert t.train_step(0).teacher_turns > 0


def test_eval_with_vllm_prompts_with_the_pinned_family_template(tmp_path, fake_vllm):
    """The model's own template differs from the pinned one it was trained on (a hub
    revision's wording): the engine must be given the pinned render, as token ids."""
    from transformers import AutoTokenizer

    from trajforge.finetune.agents import agent_factory, parse_agent

    family = get_family("qwen2.5")
    path = save_tiny(tmp_path / "m", rendered_corpus("qwen2.5"), family)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = family.template(False).replace("# Tools", "# Functions")
    tokenizer.save_pretrained(path)
    sampling = SamplingParams(temperature=0.0, max_tokens=6)
    agent = agent_factory(parse_agent(f"vllm:{path}"), sampling)(None, TOY)
    messages = (
        Message(role="system", content=agent_system_prompt(TOY.policy)),
        Message(role="user", content="Hello, what is my balance?"),
    )
    tools = TOY.toolbox.specs
    turn = run_all([agent.act(messages, tools, 0)], max_in_flight=1)[0]
    assert turn.message.role == "assistant"
    ((kind, prompts),) = fake_vllm.engines[0].calls
    pinned = generation_prompt(messages, [t.openai_schema() for t in tools], family)
    assert kind == "generate"
    assert prompts == [tokenizer(pinned, add_special_tokens=False)["input_ids"]]
    assert "# Functions" not in tokenizer.decode(prompts[0])


def test_a_chat_request_through_the_backend_stops_at_the_family_end_of_turn(tmp_path, fake_vllm):
    from trajforge.finetune.agents import model_family
    from trajforge.finetune.family_prompt import FamilyPromptFormat
    from trajforge.generators.llm.vllm_backend import VLLMBackend

    family = get_family("qwen2.5")
    path = save_tiny(tmp_path / "m", rendered_corpus("qwen2.5"), family)
    prompt_format = FamilyPromptFormat(*model_family(str(path), None))
    backend = VLLMBackend(str(path), prompt_format=prompt_format)
    request = ChatRequest(
        model="m",
        messages=(Message(role="user", content="hi"),),
        sampling=SamplingParams(temperature=0.0, max_tokens=5),
    )
    (response,) = backend.generate_now([request])
    assert response.usage.completion_tokens <= 5
    eot = prompt_format.stop_token_ids
    assert len(eot) == 1 and eot[0] == backend._engine.tokenizer.convert_tokens_to_ids("<|im_end|>")
