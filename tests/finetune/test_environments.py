"""The TRL environment adapter: reset, tools equal to the toolbox, reward equal to the verdict."""

import inspect
from typing import ClassVar

import pytest
from transformers.utils import get_json_schema

from trajforge.finetune.environments import (
    CONVERSATION_OVER,
    USER_TOOL,
    environment_class,
    environment_rows,
    environment_trajectory,
    environment_verdict,
)
from trajforge.finetune.evaluate import CHECKS
from trajforge.generators.agent import oracle_closing, oracle_for
from trajforge.generators.domains import DOMAINS, get_domain
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.personas import sample_persona
from trajforge.generators.tooling import state_hash
from trajforge.generators.user import needed_info
from trajforge.schemas import ToolCall
from trajforge.verifiers.gate import gate_verdict
from trajforge.verifiers.outcome import verify_outcome
from trajforge.verifiers.protocol import FilterModel
from trajforge.verifiers.result import FilterResult

DOMAIN = get_domain("retail")
RetailEnv = environment_class(DOMAIN)


@pytest.fixture(scope="module")
def task():
    return DOMAIN.synthesize_task(sample_persona(3), 3)


def initial_hash(task):
    return state_hash(DOMAIN.initial_state(task.initial_state))


def play_gold(env, task):
    """The gold calls straight away: the right state, but no write is confirmed first."""
    for action in task.gold_actions:
        getattr(env, action.name)(**action.arguments)


def close(env, task) -> str:
    """The oracle's closing, said again while the user restates a request whose details no
    one said (`play_gold` says nothing; the user restates each needed piece once)."""
    for _ in range(len(needed_info(task)) + 1):
        reply = env.send_message_to_user(oracle_closing(task))
        if "###STOP###" in reply:
            return reply
    raise AssertionError(f"the user did not stop: {reply}")


def play_oracle(env, task):
    """The oracle agent through the environment's tools: it asks for a yes before each write
    (the retail policy), calls the gold actions and closes, as an evaluated agent must."""
    oracle = oracle_for(task, DOMAIN)
    tools = DOMAIN.toolbox.specs
    for turn in range(4 * len(task.gold_actions) + 4):
        messages = environment_trajectory(env).messages
        act = run_all([oracle.act(messages, tools, turn)], max_in_flight=1)[0]
        for call in act.message.tool_calls:
            getattr(env, call.name)(**call.arguments)
        if not act.message.tool_calls:
            reply = env.send_message_to_user(act.message.content)
            if "###STOP###" in reply or reply == CONVERSATION_OVER:
                return
    raise AssertionError("the oracle did not finish")


def test_trl_sees_the_domain_tools_plus_the_user_channel():
    env = RetailEnv()
    methods = {name for name, _ in inspect.getmembers(env, predicate=inspect.ismethod)}
    public = {name for name in methods if not name.startswith("_")}
    tools = {spec.name for spec in DOMAIN.toolbox.specs}
    assert public == tools | {USER_TOOL, "reset", "get_reward"}


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_tool_methods_have_the_tool_schema_trl_will_render(name):
    domain = get_domain(name)
    env = environment_class(domain)()
    for spec in domain.toolbox.specs:
        schema = get_json_schema(getattr(env, spec.name))["function"]
        assert schema["name"] == spec.name
        assert set(schema["parameters"]["properties"]) == set(spec.parameters["properties"])
        assert schema["description"] == spec.description
    assert (
        "message"
        in get_json_schema(env.send_message_to_user)["function"]["parameters"]["properties"]
    )


def test_each_tool_result_equals_the_toolbox_result(task):
    env = RetailEnv()
    env.reset(task_json=task.to_json())
    state = DOMAIN.initial_state(task.initial_state)
    calls = [(a.name, a.arguments) for a in task.gold_actions]
    calls += [("get_order_details", {"order_id": "#W0000000"}), ("cancel_pending_order", {})]
    for i, (name, arguments) in enumerate(calls):
        expected = DOMAIN.toolbox.execute(
            state, ToolCall(id=f"c{i}", name=name, arguments=arguments)
        )
        if name == "cancel_pending_order":  # missing arguments: the toolbox's error, TRL's way
            with pytest.raises(TypeError):
                getattr(env, name)(**arguments)
            continue
        assert getattr(env, name)(**arguments) == expected.observation
    assert environment_trajectory(env).final_state_hash == state_hash(state)


def test_reset_restores_the_initial_state_and_conversation(task):
    env = RetailEnv()
    opening = env.reset(task_json=task.to_json())
    assert opening and environment_trajectory(env).final_state_hash == initial_hash(task)
    play_gold(env, task)
    assert environment_trajectory(env).final_state_hash == task.gold_final_hash
    assert env.reset(task_json=task.to_json()) == opening
    trajectory = environment_trajectory(env)
    assert trajectory.final_state_hash == initial_hash(task)
    assert [m.role for m in trajectory.messages] == ["system", "user"] and not trajectory.steps


def test_reward_equals_the_eval_gate(task):
    env = RetailEnv()
    env.reset(task_json=task.to_json())
    play_oracle(env, task)
    assert env.send_message_to_user("one more thing") == CONVERSATION_OVER
    assert env.get_reward() == 1.0
    assert verify_outcome(environment_trajectory(env), DOMAIN).passed
    assert gate_verdict(environment_trajectory(env), DOMAIN, CHECKS).kept

    lazy = RetailEnv()
    lazy.reset(task_json=task.to_json())
    lazy.send_message_to_user(oracle_closing(task))
    outcome = verify_outcome(environment_trajectory(lazy), DOMAIN)
    assert lazy.get_reward() == 0.0 and not outcome.passed
    assert environment_verdict(lazy).reason == "state_mismatch"

    silent = RetailEnv()
    silent.reset(task_json=task.to_json())
    play_gold(silent, task)  # right state, but never told the user nor ended the conversation
    assert silent.get_reward() == 0.0
    assert not verify_outcome(environment_trajectory(silent), DOMAIN).passed


def test_skipping_the_confirmation_earns_nothing_unless_opted_out(task):
    """The gold calls with no confirmation turn: the outcome passes but `trajforge eval`
    fails the attempt (policy.confirm_before_write), so the default reward is 0 as well."""
    assert any(DOMAIN.toolbox.spec(a.name).mutates_state for a in task.gold_actions)
    env = RetailEnv()
    env.reset(task_json=task.to_json())
    play_gold(env, task)
    assert "###STOP###" in close(env, task)
    trajectory = environment_trajectory(env)
    assert verify_outcome(trajectory, DOMAIN).passed
    assert not gate_verdict(trajectory, DOMAIN, CHECKS).kept
    assert env.get_reward() == 0.0
    assert environment_verdict(env).reason == "policy.confirm_before_write"

    OutcomeOnly = environment_class(DOMAIN, checks=())  # the explicit opt-out
    lenient = OutcomeOnly()
    lenient.reset(task_json=task.to_json())
    play_gold(lenient, task)
    close(lenient, task)
    assert lenient.get_reward() == 1.0


def test_policy_checks_can_veto_the_reward(task):
    class AtMostTwoCalls(FilterModel):
        name: ClassVar[str] = "at_most_two_calls"
        reasons: ClassVar[tuple[str, ...]] = ("loop_or_repeat",)

        def check(self, trajectory, context):
            assert context.domain is DOMAIN
            if len(trajectory.steps) > 2:
                return FilterResult.reject("loop_or_repeat", "more than two tool calls")
            return FilterResult.ok()

    Strict = environment_class(DOMAIN, checks=(AtMostTwoCalls(),))
    env = Strict()
    env.reset(task_json=task.to_json())
    play_gold(env, task)
    close(env, task)
    assert env.get_reward() == 0.0
    assert environment_verdict(env).reason == "loop_or_repeat"


def test_dataset_rows_reset_from_their_own_columns(task):
    (row,) = environment_rows(DOMAIN, [task])
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert USER_TOOL in row["prompt"][0]["content"]
    env = RetailEnv()
    assert env.reset(**row)  # TRL passes the whole row as keyword arguments


def test_using_tools_before_reset_is_an_error():
    with pytest.raises(RuntimeError, match="reset"):
        RetailEnv().send_message_to_user("hello")


def test_one_grpo_step_in_the_environment_on_cpu(tmp_path, monkeypatch):
    """TRL's GRPOTrainer takes the class unchanged: our tools, our reward, one step."""
    trl = pytest.importorskip("trl")
    from datasets import Dataset

    from tests.finetune.opd_models import save_pair
    from tests.toy_domain import TOY, make_task

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    student, _ = save_pair(tmp_path)
    ToyEnv = environment_class(TOY)
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
    )
    trainer = trl.GRPOTrainer(
        model=student,
        args=args,
        train_dataset=Dataset.from_list(environment_rows(TOY, [make_task(), make_task()])),
        environment_factory=ToyEnv,
    )
    assert {tool.__name__ for tool in trainer.tools} == {
        *(spec.name for spec in TOY.toolbox.specs),
        USER_TOOL,
    }
    trainer.train()
    logged = trainer.state.log_history[0]
    assert "rewards/ToyEnvironment/mean" in logged  # get_reward is TRL's reward source
