"""The five shortcut checks every synthesized question must pass, each with a typed reason.

- `evidence_co_coverage`: no single document states every fact the question needs;
- `single_clue_selective`: no single clue identifies its entity in the graph on its own (a
  searcher could jump straight to that entity and skip the chain before it);
- `exposed_constant`: the question does not contain the name, or a distinctive part of the
  name, of any entity the solver should find (intermediates and the answer);
- `prior_knowledge_binding`: no name in the chain or the question is a real-world name, so
  nothing outside the generated world (a model's memory) can resolve the chain;
- `guessable_answer`: the answer is one of at least `MIN_ANSWER_CANDIDATES` (8) entities a
  blind guesser could pick from (the entities the question's last relation reaches anywhere in
  the world, narrowed by any clue the question gives about the answer itself), and it is not a
  popular target: at most 1 in 8 of that relation's edges reach it. "The province that contains
  ..." has 4 candidates in a world of 4 provinces (a guess hits 1 in 4): refused; so is an
  organisation that employs a fifth of the world (naming it for every "employer of ..." hits
  often). An outcome-only reward or eval on such a task pays for guessing.

Checks are pure functions of the question and the world; `shortcut_violations` runs them all
(the report counts every violation, synthesis refuses a question with any).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import MappingProxyType
from typing import Literal

from trajforge.generators.domains.search.data_model import SearchWorld
from trajforge.generators.domains.search.questions import Question, matching
from trajforge.generators.domains.search.world import entity

ShortcutRisk = Literal[
    "evidence_co_coverage",
    "single_clue_selective",
    "exposed_constant",
    "prior_knowledge_binding",
    "guessable_answer",
]

#: Fewest entities the answer must be one of, and the inverse of the largest share of the last
#: relation's edges that may reach it: a uniform guess among the candidates hits at most 1 in 8
#: of a task, a guess of the relation's most reached entity almost never (measured over 500
#: tasks in benchmarks/search_report.py: ~9% and <1% of tasks, from ~28% and ~34% before).
MIN_ANSWER_CANDIDATES = 8

#: Name parts that say what kind of thing an entity is, not which one (never "exposed").
GENERIC_NAME_WORDS = frozenset(
    ["songs", "book", "letters", "from", "study", "nights", "echoes", "festival", "congress", "exhibition", "regatta", "fair"]
)  # fmt: skip

#: Real-world names the syllable generator can spell (and others a model knows well). A chain
#: or question using one could be "resolved" from memory instead of from the corpus.
REAL_WORLD_NAMES = frozenset(
    [
        "lima",
        "roma",
        "rome",
        "paris",
        "berlin",
        "oslo",
        "mali",
        "malta",
        "riga",
        "lisbon",
        "milan",
        "lyon",
        "pisa",
        "palma",
        "lille",
        "vienna",
        "sofia",
        "kiev",
        "lagos",
        "cairo",
        "delhi",
        "tokyo",
        "london",
        "madrid",
        "prague",
        "dublin",
        "zurich",
        "geneva",
        "bern",
        "athens",
        "boston",
        "chicago",
        "texas",
        "peru",
        "chile",
        "cuba",
        "iran",
        "iraq",
        "oman",
        "laos",
        "togo",
        "fiji",
        "samoa",
        "tonga",
        "china",
        "india",
        "japan",
        "korea",
        "kenya",
        "ghana",
        "egypt",
        "spain",
        "italy",
        "france",
        "greece",
        "norway",
        "sweden",
        "finland",
        "poland",
        "ural",
        "volga",
        "nile",
        "rhine",
        "seine",
        "loire",
        "alps",
        "ande",
        "andes",
        "everest",
        "sahara",
        "google",
        "apple",
        "amazon",
        "tesla",
        "sony",
        "nokia",
        "ikea",
        "siemens",
        "oxford",
        "cambridge",
        "harvard",
        "yale",
        "stanford",
        "unesco",
        "nato",
        "vela",
        "vera",
        "ravel",
        "verdi",
        "liszt",
        "bach",
        "mozart",
        "dante",
        "homer",
        "plato",
        "kafka",
        "tolstoy",
        "rilke",
    ]
)

_WORD = re.compile(r"[A-Za-z]+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def co_coverage(question: Question, world: SearchWorld) -> str | None:
    """A document that alone states every fact of the question, or None."""
    needed = question.facts
    for doc in world.documents:
        if needed <= doc.facts:
            return f"document {doc.doc_id} ('{doc.title}') states every fact of the question"
    return None


def single_clue(question: Question, world: SearchWorld) -> str | None:
    """A clue that alone matches exactly one entity of its type in the graph, or None."""
    for clue in question.clues:
        etype = entity(world.graph, clue.subject).type
        if len(matching(world.graph, etype, (clue,))) == 1:
            return f"'{clue.predicate} = {clue.object}' alone identifies {clue.subject}"
    return None


def _distinctive_parts(name: str) -> set[str]:
    return {w for w in _words(name) if len(w) >= 4 and w not in GENERIC_NAME_WORDS}


def exposed(question: Question, world: SearchWorld) -> str | None:
    """A name (or distinctive name part) of an entity to be found that the question states."""
    said = _words(question.text)
    for node in question.chain[1:]:
        name = entity(world.graph, node).name
        leaked = sorted(_distinctive_parts(name) & said)
        if name.lower() in question.text.lower() or leaked:
            return f"the question states {leaked or name!r} of {node} ({name}), to be found"
    return None


def prior_knowledge(question: Question, world: SearchWorld) -> str | None:
    """A real-world name used by the chain's entities or by the question, or None."""
    names = " ".join(entity(world.graph, n).name for n in question.chain)
    real = sorted((_words(names) | _words(question.text)) & REAL_WORLD_NAMES)
    if real:
        return f"real-world name(s) {real} could bind the chain outside the generated world"
    return None


def answer_candidates(question: Question, world: SearchWorld) -> list[str]:
    """Entities a blind guesser picks the answer from: every target of the question's last
    relation in the world that also satisfies the clues given about the answer itself."""
    last = question.path[-1].predicate
    clues = [c for c in question.extra_clues if c.subject == question.answer_id]
    targets = {dst for _, dst, key in world.graph.edges(keys=True) if key == last}
    return sorted(
        t
        for t in targets
        if all(entity(world.graph, t).attrs.get(c.predicate) == c.object for c in clues)
    )


def guessable(question: Question, world: SearchWorld) -> str | None:
    """Too few candidates for the answer, or an answer the last relation reaches too often;
    None when neither."""
    last = question.path[-1].predicate
    n = len(answer_candidates(question, world))
    if n < MIN_ANSWER_CANDIDATES:
        return f"the answer is one of {n} {last} targets (< {MIN_ANSWER_CANDIDATES}): guessable"
    reached = [dst for _, dst, key in world.graph.edges(keys=True) if key == last]
    share = reached.count(question.answer_id) / len(reached)
    if share * MIN_ANSWER_CANDIDATES > 1:
        return f"{share:.0%} of {last} edges reach the answer (> 1/{MIN_ANSWER_CANDIDATES})"
    return None


#: Risk -> check, in the order synthesis runs them.
SHORTCUT_CHECKS: MappingProxyType[ShortcutRisk, Callable[[Question, SearchWorld], str | None]] = (
    MappingProxyType(
        {
            "evidence_co_coverage": co_coverage,
            "single_clue_selective": single_clue,
            "exposed_constant": exposed,
            "prior_knowledge_binding": prior_knowledge,
            "guessable_answer": guessable,
        }
    )
)


def shortcut_violations(question: Question, world: SearchWorld) -> dict[ShortcutRisk, str]:
    """Every failed check with its detail (empty when the question is shortcut-resistant)."""
    found: dict[ShortcutRisk, str] = {}
    for risk, check in SHORTCUT_CHECKS.items():
        detail = check(question, world)
        if detail is not None:
            found[risk] = detail
    return found
