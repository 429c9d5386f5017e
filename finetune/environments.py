"""trajforge environments for other trainers: TRL's `GRPOTrainer(environment_factory=Cls)`.

TRL builds one `Cls()` per rollout, calls `reset(**dataset_row)` before generation (a returned
string is appended to the prompt's last message), exposes every public method but `reset` and
`get_reward` as a tool (schema from the signature and the Google-style docstring), and calls
`get_reward()` once the rollout is over. `environment_class(domain)` makes such a class for a
trajforge domain: one method per domain tool with the tool's own signature and docstring,
executed through the domain's `Toolbox` (the one error boundary, so a bad call returns the same
"Error: ..." observation the rollouts see), plus `send_message_to_user`, through which the agent
talks to the simulated user and gets the user's reply back. The reward is 1.0 when the outcome
check passes (state replay equals gold, expected outputs told to the user, the user ended the
conversation) and every configured check passes, else 0.0. By default the checks are
`trajforge eval`'s (`trajforge.finetune.evaluate.CHECKS`: the domain's policy rules, such as
confirmation before each write), so GRPO is paid for exactly what evaluation counts as a pass;
`checks=()` opts out explicitly (outcome only), any other `verifiers` trajectory filters replace
them.

Why tool-shaped user turns: GRPO's loop has no user turn; routing the conversation through a
tool keeps the simulated user in the loop without changing TRL, and the user's replies are
tool results, which GRPO never trains on.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, get_type_hints

from pydantic import BaseModel

from trajforge.finetune.evaluate import CHECKS as EVAL_CHECKS
from trajforge.generators.domain_options import options_of
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.prompts import agent_system_prompt
from trajforge.generators.rollout import (
    step_record,
    tool_message,
    user_acts,
    visible_conversation,
)
from trajforge.generators.tooling import Domain, state_hash
from trajforge.generators.user import ScriptedUser, UserSimulator
from trajforge.generators.user_tools import MAX_USER_TOOL_ROUNDS
from trajforge.schemas import (
    Message,
    Provenance,
    StepRecord,
    Task,
    TerminationReason,
    ToolCall,
    Trajectory,
    derive_seed,
)
from trajforge.verifiers.gate import Verdict, gate_verdict
from trajforge.verifiers.outcome import judge_outcome
from trajforge.verifiers.protocol import FilterContext, TrajectoryFilter, run_filter
from trajforge.verifiers.result import FilterResult

USER_TOOL = "send_message_to_user"
USER_TOOL_NOTE = (
    f"\n\nYou talk to the customer only through the `{USER_TOOL}` tool; its result is the "
    "customer's reply."
)
CONVERSATION_OVER = "Error: the customer has left the conversation; nothing more can be sent"


UserFactory = Callable[[Task], UserSimulator]


class DomainEnvironment:
    """One rollout's environment; subclasses made by `environment_class` add the tools."""

    domain: ClassVar[Domain]
    user_factory: ClassVar[UserFactory] = ScriptedUser
    checks: ClassVar[tuple[TrajectoryFilter, ...]] = ()
    max_user_turns: ClassVar[int] = 30

    def __init__(self) -> None:
        self._task: Task | None = None
        self._state: BaseModel | None = None
        self._user: UserSimulator | None = None
        self._messages: list[Message] = []
        self._steps: list[StepRecord] = []
        self._user_steps: list[StepRecord] = []  # dual control: the user's own tool calls
        self._termination: TerminationReason | None = None
        self._user_turns = 0

    def reset(self, task_json: str, **row: Any) -> str:
        """Start the task in `task_json` (a dataset row's column) from its initial state; returns
        the customer's opening message, which TRL appends to the prompt."""
        task = Task.from_json(task_json)
        self._task = task
        self._state = self.domain.initial_state(task.initial_state)
        self._user = type(self).user_factory(task)
        self._messages = [Message(role="system", content=system_prompt(self.domain))]
        self._steps = []
        self._user_steps = []
        self._termination = None
        self._user_turns = 0
        return self._user_says()

    def send_message_to_user(self, message: str) -> str:
        """Send a message to the customer and get the customer's reply.

        Args:
            message: What to tell the customer (answers, questions, confirmations).
        """
        self._require_task()
        if self._termination is not None:
            return CONVERSATION_OVER
        self._messages.append(Message(role="assistant", content=message))
        return self._user_says()

    def get_reward(self) -> float:
        """1.0 when the outcome check and every policy check pass, else 0.0."""
        return 1.0 if self._verdict().passed else 0.0

    # -- internals (underscored: TRL exposes every public method as a tool) --------------------

    def _require_task(self) -> Task:
        if self._task is None or self._state is None:
            raise RuntimeError("call reset(task_json=...) before using the environment")
        return self._task

    def _user_says(self) -> str:
        task = self._require_task()
        assert self._user is not None
        for round_ in range(MAX_USER_TOOL_ROUNDS + 1):
            visible = visible_conversation(self._messages)
            later = (round_,) if round_ else ()  # round 0: the seed it always had
            seed = derive_seed(task.id, "environment_user", self._user_turns, *later)
            turn = run_all([self._user.reply(visible, seed)], max_in_flight=1)[0]
            if not turn.message.by_user_tools:
                break
            if not self._user_acts(turn.message, last_round=round_ == MAX_USER_TOOL_ROUNDS):
                self._termination = "max_turns"  # a user that only calls tools: it is over
                return CONVERSATION_OVER
        self._user_turns += 1
        self._messages.append(turn.message)
        if turn.stop is not None:
            self._termination = turn.stop
        elif self._user_turns >= self.max_user_turns:
            self._termination = "max_turns"
        return turn.message.content or ""

    def _user_acts(self, message: Message, last_round: bool) -> bool:
        """Dual control: the user's calls on its own tools, run and recorded as the user's
        (False, nothing run: a user without tools, or one that never stops calling them)."""
        user_tools = options_of(self.domain).user_tools
        if user_tools is None or last_round:
            return False
        assert self._state is not None
        state = self._state
        messages, steps = user_acts(
            message,
            user_tools,
            lambda call: user_tools.toolbox.execute(state, call),
            len(self._user_steps),
            self._user_turns,
        )
        self._messages.extend(messages)
        self._user_steps.extend(steps)
        return True

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one call through the domain's toolbox and record it like the rollout loop."""
        self._require_task()
        assert self._state is not None
        call = ToolCall(id=f"call_{len(self._steps)}", name=name, arguments=arguments)
        execution = self.domain.toolbox.execute(self._state, call)
        self._messages.append(Message(role="assistant", tool_calls=(call,)))
        self._messages.append(tool_message(call, execution.observation))
        self._steps.append(step_record(len(self._steps), self._user_turns, call, execution))
        return execution.observation

    def _trajectory(self) -> Trajectory:
        task = self._require_task()
        assert self._state is not None
        return Trajectory.create(
            task=task,
            mode="rollout",
            messages=tuple(self._messages),
            steps=tuple(self._steps),
            user_steps=tuple(self._user_steps),
            termination=self._termination or "max_turns",
            final_state_hash=state_hash(self._state),
            provenance=Provenance(models={"agent": "trl"}, seeds={}),
        )

    def _verdict(self) -> FilterResult:
        """The outcome check, then each policy check; the first failure decides."""
        trajectory = self._trajectory()
        outcome, reason = judge_outcome(trajectory, self.domain)
        if reason is not None:
            return FilterResult.reject(reason, outcome.reason)
        context = FilterContext(self.domain)
        for check in self.checks:
            result = run_filter(check, trajectory, context)
            if not result.passed:
                return result
        return FilterResult.ok()


def system_prompt(domain: Domain) -> str:
    """The agent's system prompt in these environments: the domain policy, plus how to talk."""
    return agent_system_prompt(domain.policy, domain.vocabulary) + USER_TOOL_NOTE


def environment_trajectory(env: DomainEnvironment) -> Trajectory:
    """What happened in the environment so far, as a Trajectory the verifiers take."""
    return env._trajectory()


def environment_verdict(env: DomainEnvironment) -> FilterResult:
    """The verdict behind `get_reward`, with its typed reason when it fails."""
    return env._verdict()


def domain_tool_defs(domain: Domain) -> list[dict[str, Any]]:
    """The domain's tools as `{name, description, parameters}` (their own JSON schemas): the
    provider-agnostic shape `verifiers` and OpenEnv clients hand to a model."""
    return [
        {"name": s.name, "description": s.description, "parameters": s.parameters}
        for s in domain.toolbox.specs
    ]


def user_tool_def() -> dict[str, Any]:
    """`send_message_to_user` in the same shape, for adapters where talking is a tool call."""
    return {
        "name": USER_TOOL,
        "description": "Send a message to the customer and get the customer's reply.",
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "What to tell them."}},
            "required": ["message"],
        },
    }


def environment_over(env: DomainEnvironment) -> bool:
    """Whether the conversation has ended (the user stopped, or the user-turn budget ran out)."""
    return env._termination is not None


def environment_call(env: DomainEnvironment, name: str, arguments: dict[str, Any]) -> str:
    """Run one tool call by name, as an adapter receives it off the wire: bad arguments or an
    unknown tool come back as the toolbox's "Error: ..." observation (the model sees and
    recovers from them), not as a Python error."""
    if name == USER_TOOL:
        message = arguments.get("message")
        return env.send_message_to_user(message if isinstance(message, str) else "")
    return env._call_tool(name, arguments)


def environment_gate(env: DomainEnvironment) -> Verdict:
    """`trajforge eval`'s verdict on the environment's trajectory: the outcome and every
    configured check, with all typed reasons (not only the first), for reward metrics."""
    return gate_verdict(env._trajectory(), env.domain, env.checks)


def _tool_method(fn: Callable[..., Any]) -> Callable[..., str]:
    """A method with the tool's name, docstring and signature (minus `state`), calling it
    through the environment's toolbox: what TRL turns into the tool schema."""
    hints = get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    signature = inspect.Signature([self_param, *params], return_annotation=str)

    def method(self: DomainEnvironment, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        return self._call_tool(fn.__name__, arguments)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {p.name: hints[p.name] for p in params} | {"return": str}
    return method


def environment_class(
    domain: Domain,
    *,
    user_factory: UserFactory | None = None,
    checks: Sequence[TrajectoryFilter] | None = None,
    max_user_turns: int = 30,
) -> type[DomainEnvironment]:
    """A `DomainEnvironment` subclass for `domain`, ready for `environment_factory=`.

    `user_factory` None is the scripted user, with the domain's user tools when it has any
    (dual control: the user takes the steps on its side the agent asks for).

    `checks` None (the default) is evaluation's gate, so a trajectory that reaches the gold
    state by skipping a confirmation earns 0, as it fails `trajforge eval`; `checks=()` rewards
    the outcome alone (an explicit opt-out)."""
    if checks is None:
        checks = EVAL_CHECKS
    if user_factory is None:
        user_factory = functools.partial(ScriptedUser, user_tools=options_of(domain).user_tools)
    functions = domain.toolbox.functions()
    clashes = {fn.__name__ for fn in functions} & {USER_TOOL, "reset", "get_reward"}
    if clashes:
        raise ValueError(
            f"domain {domain.name} has tools named like environment methods: {clashes}"
        )
    namespace: dict[str, Any] = {fn.__name__: _tool_method(fn) for fn in functions}
    namespace |= {
        "domain": domain,
        "user_factory": staticmethod(user_factory),
        "checks": tuple(checks),
        "max_user_turns": max_user_turns,
        "__doc__": f"The {domain.name} domain as a TRL environment (tools: "
        + ", ".join(fn.__name__ for fn in functions)
        + f", {USER_TOOL}).",
    }
    name = "".join(part.title() for part in domain.name.split("_")) + "Environment"
    return type(name, (DomainEnvironment,), namespace)


def environment_rows(domain: Domain, tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """Dataset rows for GRPO: the prompt (system policy, an empty user turn that `reset` fills
    with the customer's opening) and the task as JSON for `reset(task_json=...)`."""
    system = system_prompt(domain)
    return [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": ""},
            ],
            "task_json": task.to_json(),
        }
        for task in tasks
    ]
