"""Task-level shortcut check: could the task be solved without any tool?

A read-only task whose expected outputs a model produces with no tools at all (because they are
guessable, leaked into the scenario, or memorised) teaches nothing about looking things up, so
it is `shortcut_prone_task`. A write task cannot be shortcut this way: without tool calls the
world state never changes, so a no-tool answer can never reach the gold final state and the
outcome verifier would fail it; such tasks pass this check.
"""

from __future__ import annotations

from trajforge.schemas import ChatRequest, LLMClient, Message, SamplingParams, Task, TaskType
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.text import extract_values, normalise

#: Task types that only read state; every other type must change it.
READ_ONLY_TASK_TYPES: frozenset[TaskType] = frozenset({"order_status", "product_info"})

_SYSTEM = (
    "You are a customer support agent with no access to any tool or database. "
    "Answer the customer's request directly and concretely, stating any ids, amounts, dates "
    "or statuses you believe are correct."
)


def is_read_only(task: Task) -> bool:
    return all(t in READ_ONLY_TASK_TYPES for t in task.intent.task_types)


def baseline_request(task: Task, model: str, seed: int) -> ChatRequest:
    """The no-tool prompt: what the user would say, everything they know, and no tools."""
    known = "\n".join(f"- {k}: {v}" for k, v in sorted(task.scenario.known_info.items()))
    user = (
        f"{task.scenario.reason_for_contact}\n{task.scenario.instructions}\nWhat I know:\n{known}"
    )
    return ChatRequest(
        model=model,
        messages=(Message(role="system", content=_SYSTEM), Message(role="user", content=user)),
        sampling=SamplingParams(temperature=0.0, max_tokens=256),
        seed=seed,
    )


async def no_tool_baseline(task: Task, llm: LLMClient, model: str, seed: int) -> str:
    """Ask `llm` to answer the task without tools; returns the answer text."""
    response = await llm.complete(baseline_request(task, model, seed))
    return response.message.content or ""


def _contains_output(answer: str, output: str) -> bool:
    wanted = extract_values(output)
    if wanted:
        return wanted <= extract_values(answer)
    return normalise(output) in normalise(answer)


def check_shortcut_prone(task: Task, answer_text: str) -> FilterResult:
    """Reject (`shortcut_prone_task`) a read-only task whose no-tool answer has every output."""
    if not is_read_only(task):
        return FilterResult.ok("write task: a no-tool answer cannot change the state")
    if not task.expected_outputs:
        return FilterResult.ok("read-only task without expected outputs: nothing to guess")
    if all(_contains_output(answer_text, o) for o in task.expected_outputs):
        listed = ", ".join(task.expected_outputs)
        return FilterResult.reject(
            "shortcut_prone_task", f"no-tool answer already states all outputs: {listed}"
        )
    return FilterResult.ok()
