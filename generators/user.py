"""Simulated users: the user side of a rollout (the "customer" in retail).

`LLMUser` plays a persona with a scenario (known info it reveals when asked, unknown info it never
invents) and ends the conversation with a stop token. From its point of view the roles are
flipped: the agent's messages are its "user" input, its own previous messages are "assistant".
Small models often slip into the agent's role ("How can I help you?"); `looks_like_agent` catches
that, the user is retried once with a reminder, and a second slip is reported to the rollout.

`ScriptedUser` is a deterministic, rule-based user built from the task, for tests and dry runs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from trajforge.generators.prompts import (
    AGENT_GREETING,
    OUT_OF_SCOPE_TOKEN,
    STOP_TOKEN,
    TRANSFER_TOKEN,
    role_reminder,
    user_system_prompt,
)
from trajforge.generators.roles import out_of_role
from trajforge.generators.user_tools import UserTools, performed, user_call_message
from trajforge.generators.values import as_number, leaf_strings, mentions_value
from trajforge.generators.vocabulary import GENERIC_VOCABULARY, DomainVocabulary
from trajforge.generators.voice import UserVoice, info_label
from trajforge.schemas import (
    ChatRequest,
    ChatResponse,
    Cost,
    LLMClient,
    Message,
    SamplingParams,
    Task,
    TerminationReason,
    ToolCall,
    derive_seed,
)


@dataclass(frozen=True)
class UserTurn:
    """One user message, the termination it asks for (if any), and what it cost.

    In a dual-control domain the message may instead be the user's calls on its own tools
    (`user_tools.user_call_message`: actor "user"); the rollout runs them, shows the user the
    results and asks it again."""

    message: Message  # role="user"
    stop: TerminationReason | None = None  # user_stop / transfer / out_of_scope
    cost: Cost = Cost()
    role_confused: bool = False  # still sounded like the agent after the retry


class UserSimulator(Protocol):
    """The user: given the visible conversation (user/assistant text), say the next thing."""

    async def reply(self, conversation: Sequence[Message], seed: int) -> UserTurn: ...


# ---------------------------------------------------------------------------------------------
# Pure checks


def stop_reason(text: str) -> TerminationReason | None:
    """The termination a user message asks for through its stop token, if any."""
    if STOP_TOKEN in text:
        return "user_stop"
    if TRANSFER_TOKEN in text:
        return "transfer"
    if OUT_OF_SCOPE_TOKEN in text:
        return "out_of_scope"
    return None


_AGENT_PHRASES = (
    r"how (?:can|may|could) i (?:help|assist)"
    r"|is there anything else i can|(?:happy|glad) to (?:help|assist)"
    r"|anything else i can (?:help|do)"
    r"|i(?: have|'ve| have just| just)? (?:{verbs}) (?:your|the)"
    r"|let me (?:look|check) (?:that|this|it) up for you"
    r"|thank you for contacting"
    r"|<tool_call>|</tool_call>|\"arguments\"\s*:|\bfunctions\.\w+\("
)


@functools.lru_cache(maxsize=32)
def _agent_phrases(verbs: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(sorted({*verbs, "issued", "initiated"}))
    return re.compile(_AGENT_PHRASES.format(verbs=alternatives), re.IGNORECASE)


def looks_like_agent(
    text: str, action_verbs: Iterable[str] = GENERIC_VOCABULARY.action_verbs
) -> bool:
    """Role-confusion check: the text sounds like the agent, not the user.

    `action_verbs` are the past-tense verbs of the domain's actions (its vocabulary): a user
    saying "I have <verb> your ..." is narrating the agent's work. Agent-speak in paraphrase
    and narrator lines are `generators.roles.out_of_role`.
    """
    return bool(_agent_phrases(tuple(sorted(action_verbs))).search(text)) or out_of_role(text)


def flip_roles(conversation: Sequence[Message]) -> list[Message]:
    """The conversation as the user-LLM sees it: agent text is 'user', its own is 'assistant'."""
    flipped = [Message(role="user", content=AGENT_GREETING)]
    for m in conversation:
        if m.by_user_tools:  # its own tool calls (its turns) and their results
            role = "assistant" if m.role == "user" else m.role
            flipped.append(m.model_copy(update={"role": role, "actor": "agent"}))
            continue
        if not m.content:
            continue
        if m.role == "assistant":
            flipped.append(Message(role="user", content=m.content))
        elif m.role == "user":
            flipped.append(Message(role="assistant", content=m.content))
    return flipped


def response_cost(response: ChatResponse) -> Cost:
    """Cost of one LLM call, from the response's usage, latency and cache flag."""
    return Cost(
        llm_calls=1,
        cached_calls=int(response.cached),
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens,
        latency_s=response.latency_s,
    )


# ---------------------------------------------------------------------------------------------
# LLM user


class LLMUser:
    """Persona-conditioned simulated user backed by an LLM, bound to one task's scenario."""

    def __init__(
        self,
        llm: LLMClient,
        model: str,
        task: Task,
        sampling: SamplingParams | None = None,
        vocabulary: DomainVocabulary = GENERIC_VOCABULARY,
        user_tools: UserTools | None = None,
    ):
        self._llm = llm
        self._model = model
        self._sampling = sampling or SamplingParams(temperature=0.7, max_tokens=200)
        self._vocabulary = vocabulary
        self._system = Message(role="system", content=user_system_prompt(task, vocabulary))
        #: Dual control: the user's own tools, offered to the model as functions.
        self._tools = user_tools.toolbox.specs if user_tools is not None else ()

    async def reply(self, conversation: Sequence[Message], seed: int) -> UserTurn:
        messages = [self._system, *flip_roles(conversation)]
        first = await self._ask(messages, seed)
        cost = response_cost(first)
        if self._calls_own_tools(first):
            return UserTurn(message=user_call_message(first.message.tool_calls), cost=cost)
        text = _user_text(first)
        verbs = self._vocabulary.action_verbs
        if not _confused(first, text, verbs):
            return _turn(text, cost)
        reminder = Message(role="system", content=role_reminder(self._vocabulary))
        second = await self._ask([*messages, reminder], derive_seed(seed, "role_reminder"))
        cost = cost + response_cost(second)
        text = _user_text(second)
        return _turn(text, cost, role_confused=_confused(second, text, verbs))

    def _calls_own_tools(self, response: ChatResponse) -> bool:
        """The reply calls only tools the user holds (any other call is out of role)."""
        names = {t.name for t in self._tools}
        calls = response.message.tool_calls
        return bool(calls) and all(c.name in names for c in calls)

    async def _ask(self, messages: list[Message], seed: int) -> ChatResponse:
        request = ChatRequest(
            model=self._model,
            messages=tuple(messages),
            sampling=self._sampling,
            seed=seed,
            tools=self._tools,
        )
        return await self._llm.complete(request)


def _user_text(response: ChatResponse) -> str:
    return (response.message.content or "").strip()


def _confused(response: ChatResponse, text: str, verbs: Iterable[str]) -> bool:
    """A user turn that calls tools, is empty, or sounds like the agent is out of role."""
    return bool(response.message.tool_calls) or not text or looks_like_agent(text, verbs)


def _turn(text: str, cost: Cost, role_confused: bool = False) -> UserTurn:
    return UserTurn(
        message=Message(role="user", content=text),
        stop=stop_reason(text),
        cost=cost,
        role_confused=role_confused,
    )


# ---------------------------------------------------------------------------------------------
# Scripted user

_DONE = re.compile(
    r"anything else|all set|all done|have a (?:great|nice|good) day|is now complete"
    r"|has been completed|everything is done",
    re.IGNORECASE,
)
_CONFIRM = re.compile(
    r"\bconfirm\b|\(yes/no\)|\byes or no\b|shall i|should i|would you like me to|do you want me to"
    r"|may i proceed|ok to proceed",
    re.IGNORECASE,
)


def asks_confirmation(text: str) -> bool:
    """The agent asks the user to confirm an action (a yes/no question about a write)."""
    return bool(_CONFIRM.search(text))


_ASKING = re.compile(
    r"\?|\bplease (?:provide|share|tell|give)|\bcould you\b|\bcan you\b", re.IGNORECASE
)
_STOPWORDS = frozenset(
    {"the", "your", "you", "and", "for", "info", "information", "details", "about", "asked"}
    | {"ask", "new", "to", "of", "with", "what", "current"}
)


@functools.lru_cache(maxsize=4096)
def _label_words(label: str) -> frozenset[str]:
    """The content words of an info label (memoised: a task's labels are asked about on every
    turn, and the same labels recur across tasks)."""
    words = {w for w in re.split(r"[^a-z0-9]+", info_label(label).lower()) if len(w) >= 2}
    return frozenset(words - _STOPWORDS)


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9]+", text.lower()))


def needed_info(task: Task) -> tuple[tuple[str, str], ...]:
    """The known info the user's own requests name (its instructions: the amount to deposit,
    the order to return) and the gold plan passes to a tool: no agent can have served the
    request without hearing it. Info that only identifies the user (an email, a zip code: in
    no request) and info no call takes (a name said for politeness) are not needed: an agent
    may have found them with a tool, out of the user's sight."""
    taken = {_plain(v) for action in task.gold_actions for v in leaf_strings(action.arguments)}
    requests = task.scenario.instructions
    return tuple(
        (k, v)
        for k, v in task.scenario.known_info.items()
        if _plain(v) in taken and mentions_value(requests, v)
    )


def _plain(value: str) -> str:
    """A value as the user and a tool call both can spell it ("79.50" and 79.5 alike)."""
    number = as_number(value)
    return str(number.normalize()) if number is not None else value.strip().lower()


def declines_first(task_id: str, rate: float) -> bool:
    """Whether the task's scripted user declines the first confirmation (`rollout.
    user_declines_first`): a seeded draw per task, the same in every build and attempt."""
    return derive_seed(task_id, "declines_first") / float(1 << 63) < rate


class ScriptedUser:
    """Deterministic user built from the task's scenario; stateless (reads the conversation).

    Opens with the reason for contact; answers questions from known info by keyword; says it
    does not know unknown info; confirms with a yes when asked to confirm; stops when the agent
    says it is done, unless its request cannot have been served: a piece of `needed_info`
    that neither side has said (it sees no tool traffic). Then it restates the request with
    that piece (as a person whose deposit amount nobody asked for would, and tau-bench's
    users do: they stop only once their goal is met), once per piece, so a conversation
    still ends. It speaks in the persona's voice (`UserVoice`: the traits shape each turn).
    With `decline_first` it says "no, not yet" to the first confirmation and yes when asked
    again: the conversation in which an agent can act after a refusal (the policy forbids it).
    """

    def __init__(
        self, task: Task, decline_first: bool = False, user_tools: UserTools | None = None
    ):
        self._scenario = task.scenario
        self._voice = UserVoice.of(task.persona, task.id)
        self._decline_first = decline_first
        self._user_tools = user_tools
        self._needed = needed_info(task)

    async def reply(self, conversation: Sequence[Message], seed: int) -> UserTurn:
        calls = self.requested_calls(conversation)
        if calls:
            return UserTurn(message=user_call_message(calls))
        return _turn(self.next_text(conversation), Cost())

    def requested_calls(self, conversation: Sequence[Message]) -> tuple[ToolCall, ...]:
        """Dual control: the calls on its own tools the agent's last text asks for, unless
        the user already made them after it (it does what it is told, once)."""
        if self._user_tools is None:
            return ()
        last = _last_agent_text(conversation)
        if last is None or any(m.by_user_tools for m in conversation[last + 1 :]):
            return ()
        actions = self._user_tools.requested(conversation[last].content or "")
        return tuple(
            ToolCall(id=f"user_{i}", name=a.name, arguments=a.arguments, actor="user")
            for i, a in enumerate(actions)
        )

    def next_text(self, conversation: Sequence[Message]) -> str:
        agent_texts = [m.content for m in conversation if m.role == "assistant" and m.content]
        voice, reason = self._voice, self._scenario.reason_for_contact
        if not agent_texts:
            return voice.opening(reason)
        acted = _results_since_agent_spoke(conversation)
        if acted:
            return " ".join(acted)
        said = " ".join(m.content or "" for m in conversation if m.role == "user")
        turn = sum(m.role == "user" for m in conversation)
        last = agent_texts[-1]
        if _DONE.search(last):
            heard = " ".join(m.content or "" for m in conversation)
            unserved = [(k, v) for k, v in self._needed if not mentions_value(heard, v)]
            if unserved:  # the agent wraps up before it asked for what the request needs
                return f"{voice.restate(reason, turn)} {voice.give(*unserved[0], turn)}"
            return f"{voice.close(reason)} {STOP_TOKEN}"
        if _CONFIRM.search(last):
            asked = sum(bool(_CONFIRM.search(t)) for t in agent_texts)
            return voice.decline(turn) if self._decline_first and asked == 1 else voice.affirm(turn)
        last_words = _words(last)  # once per turn, not once per label
        asked = [
            (label, value)
            for label, value in self._scenario.known_info.items()
            if _label_words(label) & last_words
        ]
        if asked and _ASKING.search(last):
            return " ".join(
                voice.give(label, value, turn + i) for i, (label, value) in enumerate(asked)
            )
        if _ASKING.search(last) and any(
            _label_words(item) & last_words for item in self._scenario.unknown_info
        ):
            return voice.unknown(turn)
        unrevealed = [(k, v) for k, v in self._scenario.known_info.items() if v not in said]
        if unrevealed:
            return voice.give(*unrevealed[0], turn)
        return voice.nudge(turn)


def _last_agent_text(conversation: Sequence[Message]) -> int | None:
    """Index of the agent's last text message, if it has said anything."""
    for i in range(len(conversation) - 1, -1, -1):
        if conversation[i].role == "assistant" and conversation[i].content:
            return i
    return None


def _results_since_agent_spoke(conversation: Sequence[Message]) -> list[str]:
    """What the user's own tool calls since the agent's last text showed, as it tells them."""
    last = _last_agent_text(conversation)
    since = conversation[last + 1 :] if last is not None else conversation
    return [
        f"I tried, but it says: {text.removeprefix('Error: ')}"
        if text.startswith("Error")
        else f"Okay, done. {text}"
        for _, text in performed(since)
    ]
