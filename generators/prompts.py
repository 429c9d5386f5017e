"""Prompt texts for the simulated user, the teacher agent and blueprint verbalisation.

Kept in one module so prompt changes are reviewed in one place and the scripted responders
(`trajforge.generators.llm.responders`) can read the same marked sections the prompts write.
What the two parties are called comes from the domain's vocabulary (`user_role`, `agent_role`:
"customer" and "customer-support agent" in retail), so no prompt hard-codes one domain.
"""

from __future__ import annotations

import hashlib
import re

from trajforge.generators.vocabulary import GENERIC_VOCABULARY, DomainVocabulary
from trajforge.generators.voice import speaking_rules
from trajforge.schemas import Message, Persona, Task

STOP_TOKEN = "###STOP###"
TRANSFER_TOKEN = "###TRANSFER###"
OUT_OF_SCOPE_TOKEN = "###OUT-OF-SCOPE###"
SIMULATOR_TOKENS = (STOP_TOKEN, TRANSFER_TOKEN, OUT_OF_SCOPE_TOKEN)


def strip_control_tokens(text: str | None) -> str | None:
    """The text without the simulator's control tokens: they steer the rollout loop and must
    never reach exported training messages (a model trained on them learns to emit them).
    The one place these tokens are removed; the termination reason keeps what they said."""
    if not text:
        return text
    for token in SIMULATOR_TOKENS:
        text = text.replace(token, "")
    return text.strip()


#: A tool-call id every chat template accepts: Mistral's templates raise on any id that is not
#: exactly 9 alphanumeric characters; every other template takes any string.
_TEMPLATE_ID = re.compile(r"[A-Za-z0-9]{9}")


def template_call_id(call_id: str | None) -> str | None:
    """`call_id` as an id every chat template takes: kept when it is already 9 alphanumeric
    characters, else the first 9 hex digits of its sha256 (a call and the tool result that
    answers it map to the same id; applying it twice changes nothing)."""
    if call_id is None or _TEMPLATE_ID.fullmatch(call_id):
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


def _template_ids(message: Message) -> bool:
    ids = [c.id for c in message.tool_calls] + [message.tool_call_id]
    return all(i == template_call_id(i) for i in ids)


def training_message(message: Message) -> Message | None:
    """A message as trainers get it (the `messages` view, and `finetune`'s loader on runs
    without that view, so both give the same conversation): control tokens stripped; a user
    turn left empty by that dropped (None); no text beside tool calls is None, not ""; call ids
    (and the `tool_call_id` answering them) as `template_call_id` gives them; a tool result
    keeps its `name` (the function it answers: vLLM's Hermes template requires it)."""
    content = strip_control_tokens(message.content)
    if message.role == "user" and not content and not message.tool_calls:
        return None  # (a dual-control user's tool calls stay, marked with their actor)
    if (
        content == message.content
        and (content or not message.tool_calls)
        and _template_ids(message)
    ):
        # Already as trainers get it: the rebuilt message would be equal (its content passes
        # the idempotent sanitiser again), and exports rebuild every message of every row.
        return message
    return Message(
        role=message.role,
        content=content if content or not message.tool_calls else None,
        tool_calls=tuple(
            c.model_copy(update={"id": template_call_id(c.id)}) for c in message.tool_calls
        ),
        tool_call_id=template_call_id(message.tool_call_id),
        name=message.name,
        actor=message.actor,
    )


#: Marked sections a scripted responder can parse without knowing anything else of the prompt.
REQUIRED_BEGIN = "[REQUIRED ENTITIES]"
REQUIRED_END = "[/REQUIRED ENTITIES]"
DRAFT_BEGIN = "[DRAFT]"
DRAFT_END = "[/DRAFT]"
REASON_BEGIN = "[REASON FOR CONTACT]"
REASON_END = "[/REASON FOR CONTACT]"

#: What the user-LLM sees as the agent's greeting before the first user turn.
AGENT_GREETING = "Hi! How can I help you today?"


def role_reminder(vocabulary: DomainVocabulary = GENERIC_VOCABULARY) -> str:
    """The nudge sent when a simulated user's reply sounded like the agent."""
    user, agent = vocabulary.user_role, vocabulary.agent_role
    return (
        f"Reminder: you are the {user.upper()}, not the {agent}. Do not offer help, do not say "
        f"you performed any action, never write tool calls. Reply with the {user}'s next message "
        "only."
    )


def first_person(reason: str) -> str:
    """A scenario's second-person reason ("You want to ...") as the user would say it."""
    text = reason.strip()
    text = re.sub(r"^You want\b", "Hi, I want", text)
    text = re.sub(r"^You\b", "Hi, I", text)
    text = re.sub(r"\bthe account's\b", "my account's", text)
    text = re.sub(r"\byou\b", "I", text)
    return re.sub(r"\byour\b", "my", text)


def describe_persona(persona: Persona) -> str:
    """Persona as prose: traits, background and communication style."""
    t = persona.traits
    traits = (
        f"patience {t.patience}, verbosity {t.verbosity}, tech literacy {t.tech_literacy}, "
        f"assertiveness {t.assertiveness}, formality {t.formality}, emotional state "
        f"{t.emotional_state}, detail orientation {t.detail_orientation}, politeness "
        f"{t.politeness}, decisiveness {t.decisiveness}, trust in the agent {t.trust_in_agent}, "
        f"time pressure {t.time_pressure}"
    )
    return (
        f"Your name is {persona.name}. {persona.background}\n"
        f"Traits: {traits}.\nCommunication style: {persona.communication_style}\n"
        f"How you speak: {speaking_rules(t)}"
    )


def user_system_prompt(task: Task, vocabulary: DomainVocabulary = GENERIC_VOCABULARY) -> str:
    """System prompt of the simulated user: persona, scenario, disclosure and stop rules."""
    s = task.scenario
    known = "\n".join(f"- {label}: {value}" for label, value in s.known_info.items()) or "- none"
    unknown = "\n".join(f"- {item}" for item in s.unknown_info) or "- none"
    return (
        f"You are the {vocabulary.user_role.upper()}, talking to the {vocabulary.agent_role}. "
        "You are not the agent: never offer help, never claim to have performed actions, never "
        "write tool calls.\n\n"
        f"{describe_persona(task.persona)}\n\n"
        f"{REASON_BEGIN}\n{s.reason_for_contact}\n{REASON_END}\n\n"
        f"Instructions: {s.instructions}\n\n"
        "Information you know (give each piece only when the agent asks for it or it becomes "
        f"relevant, one or two at a time):\n{known}\n\n"
        "Information you do NOT know (if asked, say you don't know; never make it up):\n"
        f"{unknown}\n\n"
        "Rules: write one short message at a time, in your own voice. Never invent ids, "
        "amounts, emails or addresses. When everything you wanted is done, reply with "
        f"{STOP_TOKEN} at the end of your message. If the agent transfers you to a human, "
        f"reply with {TRANSFER_TOKEN}. If your request cannot be handled at all, reply with "
        f"{OUT_OF_SCOPE_TOKEN}."
    )


def agent_system_prompt(policy: str, vocabulary: DomainVocabulary = GENERIC_VOCABULARY) -> str:
    """System prompt of the teacher agent: the domain policy is the whole instruction."""
    return (
        f"You are the {vocabulary.agent_role}. Use the tools to look up and change the records; "
        "never guess facts a tool can tell you. Follow this policy:\n\n" + policy.strip()
    )


def verbaliser_system_prompt(
    persona: Persona | None, vocabulary: DomainVocabulary = GENERIC_VOCABULARY
) -> str:
    """System prompt for one blueprint utterance: the user's (with `persona`) or the agent's."""
    speaker = vocabulary.user_role if persona is not None else vocabulary.agent_role
    who = (
        f"You write the next message of {persona.name}, the {speaker} in a chat with the "
        f"{vocabulary.agent_role}. Mood: {persona.traits.emotional_state}. "
        f"Style: {persona.communication_style} {speaking_rules(persona.traits)}"
        if persona is not None
        else f"You write the next message of a polite {speaker} in a chat."
    )
    return (
        f"{who}\nRewrite the draft as one short natural message from the {speaker}. Keep every "
        "required entity exactly as written. Do not add any id, amount, email or other fact "
        "that is not in the draft. Output only the message."
    )


def verbaliser_user_prompt(draft: str, required: tuple[str, ...], context: str) -> str:
    """User prompt for one utterance: context, the draft, and the marked required entities."""
    entities = "\n".join(f"- {e}" for e in required) or "- none"
    return (
        f"Conversation so far:\n{context or '(start of conversation)'}\n\n"
        f"{DRAFT_BEGIN}\n{draft}\n{DRAFT_END}\n\n"
        f"{REQUIRED_BEGIN}\n{entities}\n{REQUIRED_END}\n"
    )


def section(text: str, begin: str, end: str) -> str | None:
    """The text between two markers, stripped, or None when the section is absent."""
    start = text.find(begin)
    if start < 0:
        return None
    stop = text.find(end, start + len(begin))
    if stop < 0:
        return None
    return text[start + len(begin) : stop].strip()
