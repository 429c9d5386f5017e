"""Task-level shortcut check: could the task be solved without any tool?

A read-only task whose expected outputs a model produces with no tools at all (because they are
guessable, leaked into the scenario, or memorised) teaches nothing about looking things up, so
it is `shortcut_prone_task`. A write task cannot be shortcut this way: without tool calls the
world state never changes, so a no-tool answer can never reach the gold final state and the
outcome verifier would fail it; such tasks pass this check. Which task types only read is the
domain's word (`DomainVocabulary.read_only_task_types`), as is what the two parties are called.
"""

from __future__ import annotations

from trajforge.generators.values import extract_values, normalise
from trajforge.generators.vocabulary import GENERIC_VOCABULARY, DomainVocabulary
from trajforge.schemas import ChatRequest, LLMClient, Message, SamplingParams, Task
from trajforge.verifiers.result import FilterResult


def _system(vocabulary: DomainVocabulary) -> str:
    return (
        f"You are the {vocabulary.agent_role}, with no access to any tool or database. "
        f"Answer the {vocabulary.user_role}'s request directly and concretely, stating any ids, "
        "amounts, dates or statuses you believe are correct."
    )


def is_read_only(task: Task, vocabulary: DomainVocabulary) -> bool:
    """Every task type of the task only reads state (per its domain's vocabulary)."""
    return vocabulary.is_read_only(tuple(task.intent.task_types))


def baseline_request(
    task: Task,
    model: str,
    seed: int,
    vocabulary: DomainVocabulary = GENERIC_VOCABULARY,
    max_tokens: int = 256,
) -> ChatRequest:
    """The no-tool prompt: what the user would say, everything they know, and no tools."""
    known = "\n".join(f"- {k}: {v}" for k, v in sorted(task.scenario.known_info.items()))
    user = (
        f"{task.scenario.reason_for_contact}\n{task.scenario.instructions}\nWhat I know:\n{known}"
    )
    return ChatRequest(
        model=model,
        messages=(
            Message(role="system", content=_system(vocabulary)),
            Message(role="user", content=user),
        ),
        sampling=SamplingParams(temperature=0.0, max_tokens=max_tokens),
        seed=seed,
    )


async def no_tool_baseline(
    task: Task,
    llm: LLMClient,
    model: str,
    seed: int,
    vocabulary: DomainVocabulary = GENERIC_VOCABULARY,
    max_tokens: int = 256,
) -> str:
    """Ask `llm` to answer the task without tools; returns the answer text."""
    response = await llm.complete(baseline_request(task, model, seed, vocabulary, max_tokens))
    return response.message.content or ""


def _contains_output(answer: str, output: str) -> bool:
    wanted = extract_values(output)
    if wanted:
        return wanted <= extract_values(answer)
    return normalise(output) in normalise(answer)


def check_shortcut_prone(
    task: Task, answer_text: str, vocabulary: DomainVocabulary
) -> FilterResult:
    """Reject (`shortcut_prone_task`) a read-only task whose no-tool answer has every output."""
    if not is_read_only(task, vocabulary):
        return FilterResult.ok("write task: a no-tool answer cannot change the state")
    if not task.expected_outputs:
        return FilterResult.ok("read-only task without expected outputs: nothing to guess")
    if all(_contains_output(answer_text, o) for o in task.expected_outputs):
        listed = ", ".join(task.expected_outputs)
        return FilterResult.reject(
            "shortcut_prone_task", f"no-tool answer already states all outputs: {listed}"
        )
    return FilterResult.ok()
