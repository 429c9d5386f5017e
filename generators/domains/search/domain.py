"""`SearchDomain`: a seeded fictional world, its corpus, search tools and multi-hop tasks."""

from __future__ import annotations

from importlib import resources

from trajforge.generators.domains.search import tasks
from trajforge.generators.domains.search.checks import TRAJECTORY_CHECKS
from trajforge.generators.domains.search.data_model import SearchState
from trajforge.generators.domains.search.query_meaning import CALL_MEANINGS
from trajforge.generators.domains.search.tools import TOOLS
from trajforge.generators.domains.search.verification import OUTCOME_CHECKS
from trajforge.generators.phrasing import Citation, Phrasing
from trajforge.generators.tooling import Toolbox, apply_patches
from trajforge.generators.vocabulary import DomainVocabulary, with_generic_verbs
from trajforge.schemas import InitialState, Persona, Task


def load_policy() -> str:
    """The agent's rules, shipped as package data next to the code they describe."""
    return (
        resources.files("trajforge.generators.domains.search")
        .joinpath("policy.md")
        .read_text("utf-8")
    )


#: A question is answered from the corpus; the one write only records the answer, so a model that
#: answers without any tool (prior knowledge, a guess) is exactly the shortcut the no-tool
#: baseline looks for: the task type counts as read-only.
VOCABULARY = DomainVocabulary(
    task_types=(tasks.TASK_TYPE,),
    read_only_task_types=frozenset({tasks.TASK_TYPE}),
    user_role="user",
    agent_role="research assistant",
    action_verbs=with_generic_verbs({"answered": ("answer",), "recorded": ("answer",)}),
)


#: The closing names the answer and the documents read that state it (generators/phrasing.py).
PHRASING = Phrasing(
    cite=Citation(
        sentences=(
            "I found it: the answer is {value}, as stated on {sources}.",
            "According to {sources}, the answer to your question is {value}.",
            "Based on what I read in {sources}, it is {value}.",
            "What I read ({sources}) shows that the answer is {value}.",
            "From {sources}, I can tell you the answer is {value}.",
        )
    )
)


class SearchDomain:
    """Information seeking over a generated document collection (multi-hop questions)."""

    name = "search"
    vocabulary = VOCABULARY
    outcome_checks = OUTCOME_CHECKS
    trajectory_checks = TRAJECTORY_CHECKS  # citations, names shown, user leaks (checks.py)
    call_meanings = CALL_MEANINGS  # searches compared by their content words (loops)
    phrasing = PHRASING
    confirm_writes = False  # the one write is the final answer; the policy asks no confirmation

    def __init__(self) -> None:
        self.policy: str = load_policy()
        self.toolbox: Toolbox = Toolbox(TOOLS)

    def __reduce__(self):
        """Pickle by name: the toolbox's generated argument models are not picklable."""
        return (SearchDomain, ())

    def initial_state(self, init: InitialState) -> SearchState:
        """The state of world `init.seed` with no answer yet (patches applied, if any)."""
        state = SearchState(world_seed=init.seed)
        if init.patches:
            state = apply_patches(state, init.patches)
        return state  # type: ignore[return-value]

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        """A shortcut-checked multi-hop task; raises TaskRejected when none is feasible."""
        return tasks.synthesize_task(self.toolbox, self.initial_state, persona, seed)
