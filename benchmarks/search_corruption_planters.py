"""Fault planters and good variants for the search corruption benchmark
(search_corruption_bench.py).

Each planter edits a conversation *script* (what the user says, what the agent says and calls;
generators/scripted_trajectory.py) of a search task and returns the edited script, or None when
the base has nothing to plant on. The bench plays every script for real (each call executed on
a fresh state), so results, errors and the final hash are what the tools produce.

Which variants are faults is decided here from the plain text of the conversation (a full
entity name in an earlier tool output), never by calling the checks under test. Wordings are
drawn from several phrasings per class so no check is tuned to one sentence.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from trajforge.generators.domains.search.corpus import Fact, sentence
from trajforge.generators.domains.search.data_model import SearchWorld
from trajforge.generators.domains.search.gold_script import answer_sources
from trajforge.generators.domains.search.synthesis import Synthesized
from trajforge.generators.domains.search.world import RELATIONS, entities, entity
from trajforge.generators.scripted_trajectory import Call, Say, Turn, User, play_script
from trajforge.generators.tooling import Domain
from trajforge.schemas import Task, Trajectory


@dataclass(frozen=True)
class Base:
    """One base conversation and what its task is about."""

    task: Task
    domain: Domain
    world: SearchWorld
    found: Synthesized
    script: tuple[Turn, ...]

    @property
    def answer(self) -> str:
        return self.found.question.answer

    def name(self, node: str) -> str:
        return entity(self.world.graph, node).name

    def title(self, doc_id: str) -> str:
        return self.world.by_id[doc_id].title


Script = list[Turn]
Planter = Callable[[Base, random.Random], Script | None]


def script_of(trajectory: Trajectory) -> Script:
    """A played trajectory back as a script (tool messages are regenerated when played)."""
    script: Script = []
    for m in trajectory.messages:
        if m.role == "user":
            script.append(User(m.content or ""))
        elif m.role == "assistant":
            if m.content:
                script.append(Say(m.content))
            script += [Call(c.name, dict(c.arguments)) for c in m.tool_calls]
    return script


# --- script positions --------------------------------------------------------------------


def _calls(script: Script, name: str) -> list[int]:
    return [i for i, t in enumerate(script) if isinstance(t, Call) and t.name == name]


def _answer_at(script: Script) -> int:
    return _calls(script, "answer")[0]


def _closing_at(script: Script) -> int:
    return max(i for i, t in enumerate(script) if isinstance(t, Say))


def _first_tool_at(script: Script) -> int:
    return next(i for i, t in enumerate(script) if isinstance(t, Call))


def _shown_before(base: Base, script: Script, at: int) -> str:
    """Everything tool outputs and user turns showed before script position `at`, lower case."""
    played = play_script(base.task, base.domain, script[:at])
    return " ".join(
        (m.content or "") for m in played.messages if m.role in ("tool", "user")
    ).lower()


def _listed(base: Base, script: Script) -> list[str]:
    """Doc ids search results listed in the base conversation, in order."""
    played = play_script(base.task, base.domain, script)
    ids = []
    for step in played.steps:
        if step.call.name == "search" and step.result:
            ids += [r["doc_id"] for r in json.loads(step.result)]
    return list(dict.fromkeys(ids))


def _opened(script: Script) -> list[str]:
    return [t.arguments["doc_id"] for t in script if isinstance(t, Call) and t.name == "open"]


def _with_closing(script: Script, text: str) -> Script:
    out = list(script)
    out[_closing_at(out)] = Say(text)
    return out


def _cite_line(rng: random.Random, answer: str, cited: str) -> str:
    return rng.choice(
        [
            f"The answer is {answer}, as stated in {cited}.",
            f"According to {cited}, it is {answer}.",
            f"{answer} is what you are looking for (source: {cited}).",
            f"I checked {cited}: the answer is {answer}.",
            f"Per {cited}, the answer to your question is {answer}.",
        ]
    )


def _cited(base: Base, rng: random.Random, doc_ids: list[str]) -> str:
    if rng.random() < 0.5:
        return " and ".join(doc_ids)
    return " and ".join(f"'{base.title(d)}'" for d in doc_ids)


# --- bad: answering without the evidence ---------------------------------------------------


def unread_answer(base: Base, rng: random.Random) -> Script | None:
    """Searches kept, every document read dropped: the answer comes from snippets or nowhere."""
    return [t for t in base.script if not (isinstance(t, Call) and t.name in ("open", "find"))]


def answer_tool_first(base: Base, rng: random.Random) -> Script | None:
    """The `answer` call made before the reads (its echo then 'shows' the answer)."""
    script = list(base.script)
    call = script.pop(_answer_at(script))
    at = rng.choice([_first_tool_at(script), _first_tool_at(script) + 1])
    return [*script[:at], call, *script[at:]]


def answer_said_early(base: Base, rng: random.Random) -> Script | None:
    """The agent names the answer in prose before reading anything that states it."""
    a = base.answer
    line = rng.choice(
        [
            f"My first guess would be {a}; let me verify.",
            f"I suspect the answer is {a}, but I will check the documents.",
            f"It is probably {a}. Checking now.",
        ]
    )
    script = list(base.script)
    at = _first_tool_at(script) + 1
    return [*script[:at], Say(line), *script[at:]]


def skipped_reveal(base: Base, rng: random.Random) -> Script | None:
    """The read revealing an intermediate dropped; the same fact read from the other side only
    after the agent has already searched the name no output had shown."""
    script, world, question = list(base.script), base.world, base.found.question
    options = []
    for hop in question.path[:-1]:
        opened = [
            i
            for i in _calls(script, "open")
            if hop.key in world.by_id[script[i].arguments["doc_id"]].facts
        ]
        if not opened:
            continue
        at = opened[0]
        needed = world.by_id[script[at].arguments["doc_id"]].facts & question.facts
        other = [
            d.doc_id
            for d in world.documents
            if needed <= d.facts and d.doc_id != script[at].arguments["doc_id"]
        ]
        if other:
            options.append((at, hop.object, rng.choice(other)))
    rng.shuffle(options)
    for at, hidden, other in options:
        drop = (
            {at, at - 1}
            if isinstance(script[at - 1], Call) and script[at - 1].name == "search"
            else {at}
        )
        kept = [t for i, t in enumerate(script) if i not in drop]
        answer = _answer_at(kept)
        late = [
            Call("search", {"query": base.name(hidden), "k": 10}),
            Call("open", {"doc_id": other}),
        ]
        variant = [*kept[:answer], *late, *kept[answer:]]
        name = base.name(hidden).lower()
        uses = [
            i
            for i, t in enumerate(variant)
            if isinstance(t, Call) and name in str(t.arguments).lower()
        ]
        if uses and name not in _shown_before(base, variant, uses[0]):
            return variant
    return None  # every revealed name is shown elsewhere first: no fault to plant


def guessed_intermediate(base: Base, rng: random.Random) -> Script | None:
    """A search for a later entity of the chain made before anything showed its name."""
    script = list(base.script)
    at = _first_tool_at(script) + 1
    shown = _shown_before(base, script, at + 1)
    hidden = [n for n in base.found.question.chain[1:] if base.name(n).lower() not in shown]
    if not hidden:
        return None
    name = base.name(rng.choice(hidden))
    query = rng.choice([f"{name}", f"{name} born", f"{name} based", f"who is {name}"])
    return [*script[:at], Call("search", {"query": query, "k": 5}), *script[at:]]


def wrong_answer(base: Base, rng: random.Random) -> Script | None:
    """Another entity of the answer's type answered and told."""
    answer = entity(base.world.graph, base.found.question.answer_id)
    others = [
        e.name for e in entities(base.world.graph) if e.type == answer.type and e.id != answer.id
    ]
    wrong = rng.choice(others)
    script = [
        Call("answer", {"text": wrong}) if isinstance(t, Call) and t.name == "answer" else t
        for t in base.script
    ]
    return _with_closing(script, f"The answer is {wrong}.")


# --- bad: citations ------------------------------------------------------------------------


def cite_listed_unopened(base: Base, rng: random.Random) -> Script | None:
    """The closing cites a search result that was never opened."""
    opened = set(_opened(base.script))
    listed = [d for d in _listed(base, base.script) if d not in opened]
    if not listed:
        return None
    cited = [rng.choice(listed)] + (answer_sources(base.task)[:1] if rng.random() < 0.5 else [])
    return _with_closing(base.script, _cite_line(rng, base.answer, _cited(base, rng, cited)))


def cite_unseen_document(base: Base, rng: random.Random) -> Script | None:
    """The closing cites a document id no output ever listed."""
    listed = set(_listed(base, base.script))
    unseen = [d.doc_id for d in base.world.documents if d.doc_id not in listed]
    cited = [rng.choice(unseen)]
    return _with_closing(base.script, _cite_line(rng, base.answer, " and ".join(cited)))


def cite_opened_off_topic(base: Base, rng: random.Random) -> Script | None:
    """An off-topic search result is opened and cited as the source of the answer."""
    opened = set(_opened(base.script))
    facts = base.found.question.facts
    listed = [
        d
        for d in _listed(base, base.script)
        if d not in opened and not base.world.by_id[d].facts & facts
    ]
    if not listed:
        return None
    doc = rng.choice(listed)
    script = list(base.script)
    answer = _answer_at(script)
    script = [*script[:answer], Call("open", {"doc_id": doc}), *script[answer:]]
    return _with_closing(script, _cite_line(rng, base.answer, _cited(base, rng, [doc])))


def cite_page_without_answer(base: Base, rng: random.Random) -> Script | None:
    """The closing cites only opened pages of the chain that do not state the answer's fact."""
    sources = set(answer_sources(base.task))
    others = [d for d in dict.fromkeys(_opened(base.script)) if d not in sources]
    if not others:
        return None
    cited = rng.sample(others, k=min(len(others), rng.choice([1, 2])))
    return _with_closing(base.script, _cite_line(rng, base.answer, _cited(base, rng, cited)))


# --- bad: names never shown ----------------------------------------------------------------


def unshown_name_in_closing(base: Base, rng: random.Random) -> Script | None:
    """The closing names an entity no tool output or user turn had shown."""
    shown = _shown_before(base, list(base.script), len(base.script))
    unseen = [
        e.name
        for e in entities(base.world.graph)
        if not any(w.lower() in shown for w in e.name.split() if len(w) >= 4 and w[0].isupper())
    ]
    if not unseen:
        return None
    name = rng.choice(unseen)
    extra = rng.choice(
        [
            f" The chain runs through {name}.",
            f" {name} is part of the connection.",
            f" (This goes back to {name}.)",
        ]
    )
    script = list(base.script)
    closing = script[_closing_at(script)]
    script[_closing_at(script)] = Say(closing.text + extra)
    return script


# --- bad: loops ----------------------------------------------------------------------------


def _shown_name(base: Base) -> str:
    return base.name(base.found.question.chain[1])


def search_loop_reworded(base: Base, rng: random.Random) -> Script | None:
    """The same search three times in trivially different words (order, punctuation, filler,
    another `k`)."""
    name = _shown_name(base)
    keyword = (
        RELATIONS[base.found.question.path[1].predicate].keyword
        if base.found.question.hops > 1
        else "born"
    )
    forms = [
        f"{name} {keyword}",
        f"{keyword} {name}",
        f"{name}, {keyword}?",
        f"please find {name} {keyword}",
        f"{keyword.upper()} {name.lower()}",
        f"information about {name} {keyword}",
    ]
    queries = rng.sample(forms, 3)
    ks = [rng.choice([3, 5, 8, 10]) for _ in queries]
    script = list(base.script)
    answer = _answer_at(script)
    searches = [Call("search", {"query": q, "k": k}) for q, k in zip(queries, ks, strict=True)]
    return [*script[:answer], *searches, *script[answer:]]


# --- bad: the user hands over what the agent must find -------------------------------------


def _user_line(rng: random.Random, name: str) -> str:
    return rng.choice(
        [
            f"By the way, a friend told me it might be {name}.",
            f"I have a feeling {name} is involved.",
            f"Could it have something to do with {name}?",
            f"Someone mentioned {name} to me earlier.",
        ]
    )


def _leak(base: Base, rng: random.Random, name: str) -> Script:
    script = list(base.script)
    if rng.random() < 0.5:
        opening = script[0]
        script[0] = User(f"{opening.text} {_user_line(rng, name)}")
        return script
    at = _first_tool_at(script) + 2
    return [*script[:at], Say("Let me keep looking."), User(_user_line(rng, name)), *script[at:]]


def user_leaks_answer(base: Base, rng: random.Random) -> Script | None:
    """A user turn names the answer before the agent said it."""
    return _leak(base, rng, base.answer)


def user_leaks_intermediate(base: Base, rng: random.Random) -> Script | None:
    """A user turn names an entity of the chain the question does not name."""
    chain = base.found.question.chain[1:-1]
    if not chain:
        return None
    return _leak(base, rng, base.name(rng.choice(chain)))


# --- good variants -------------------------------------------------------------------------


def _read_pairs(script: Script) -> list[tuple[int, int]]:
    return [
        (i - 1, i)
        for i in _calls(script, "open")
        if isinstance(script[i - 1], Call) and script[i - 1].name == "search"
    ]


def reordered_reads(base: Base, rng: random.Random) -> Script | None:
    """The gold reads in another order, where every name searched for was shown before."""
    script = list(base.script)
    pairs = _read_pairs(script)
    if len(pairs) < 2:
        return None
    first, last = pairs[0][0], pairs[-1][1]
    blocks = [script[a : b + 1] for a, b in pairs]
    names = [base.name(n).lower() for n in base.found.question.chain]
    for _ in range(30):
        order = rng.sample(range(len(blocks)), len(blocks))
        if order == sorted(order):
            continue
        variant = [*script[:first], *(t for k in order for t in blocks[k]), *script[last + 1 :]]
        if _names_shown_before_use(base, variant, names):
            return variant
    return None


def _names_shown_before_use(base: Base, script: Script, names: list[str]) -> bool:
    played = play_script(base.task, base.domain, script)
    shown = ""
    for m in played.messages:
        if m.role == "assistant":
            used = " ".join(str(c.arguments) for c in m.tool_calls).lower()
            if any(n in used and n not in shown for n in names):
                return False
        elif m.role in ("tool", "user") and m.name != "answer":
            shown += " " + (m.content or "").lower()
    return True


def other_page_same_fact(base: Base, rng: random.Random) -> Script | None:
    """One read replaced by another page that states the same needed facts, found by the same
    search asking for ten results."""
    script, world, facts = list(base.script), base.world, base.found.question.facts
    options = []
    for at, i in _read_pairs(script):
        doc, query = script[i].arguments["doc_id"], script[at].arguments["query"]
        listed = {world.documents[j].doc_id for j, _ in world.index.top(query, 10)}
        needed = world.by_id[doc].facts & facts
        options += [
            (at, query, d) for d in sorted(listed - {doc}) if needed <= world.by_id[d].facts
        ]
    if not options:
        return None
    at, query, other = rng.choice(options)
    swap = [Call("search", {"query": query, "k": 10}), Call("open", {"doc_id": other})]
    variant = [*script[:at], *swap, *script[at + 2 :]]
    sources = [
        d for d in dict.fromkeys(_opened(variant)) if world.by_id[d].facts & _answer_facts(base)
    ]
    return _with_closing(variant, _cite_line(rng, base.answer, _cited(base, rng, sources)))


def _answer_facts(base: Base) -> frozenset[str]:
    q = base.found.question
    return frozenset(f for f in q.facts if q.answer_id in f.split("|")[::2])


def find_instead_of_open(base: Base, rng: random.Random) -> Script | None:
    """Reads made with `find` (one per needed sentence, looked up by words already known)
    instead of `open`."""
    script, world, facts = list(base.script), base.world, base.found.question.facts
    out: Script = []
    for turn in script:
        if not (isinstance(turn, Call) and turn.name == "open") or rng.random() < 0.3:
            out.append(turn)
            continue
        doc = world.by_id[turn.arguments["doc_id"]]
        shown = _shown_before(base, out, len(out))
        finds = [_find_call(base, doc, key, shown) for key in sorted(doc.facts & facts)]
        if not finds or None in finds:
            out.append(turn)
            continue
        out += finds
    return out if out != script else None


def _find_call(base: Base, doc, key: str, shown: str) -> Call | None:
    fact = Fact.from_key(key)
    said = next(
        (s for rev in (False, True) if (s := sentence(base.world.graph, fact, rev)) in doc.text),
        None,
    )
    if said is None:
        return None
    parts = [said.rstrip(".")]
    for node in (fact.subject, fact.object):
        if node in base.world.graph and base.name(node).lower() not in shown:
            parts = [p for part in parts for p in part.split(base.name(node))]
    words = max((p.strip(" ,.") for p in parts), key=len)
    if len(words.split()) < 2:
        return None
    return Call("find", {"doc_id": doc.doc_id, "text": words})


def doc_id_citations(base: Base, rng: random.Random) -> Script | None:
    """The closing cites the sources by document id."""
    ids = " and ".join(answer_sources(base.task))
    return _with_closing(base.script, _cite_line(rng, base.answer, ids))


def paraphrased_closing(base: Base, rng: random.Random) -> Script | None:
    """The closing in other words, citing the same pages by title."""
    titles = " and ".join(f"'{base.title(d)}'" for d in answer_sources(base.task))
    text = rng.choice(
        [
            f"Good news: {base.answer} is the answer. You can read it on {titles}.",
            f"Based on the pages {titles}, the answer is {base.answer}.",
            f"It's {base.answer}. I found this in {titles}.",
        ]
    )
    return _with_closing(base.script, text)


def distinct_searches(base: Base, rng: random.Random) -> Script | None:
    """Three searches about a known name with different keywords (not a loop)."""
    name = _shown_name(base)
    keywords = rng.sample([r.keyword for r in RELATIONS.values()], 3)
    script = list(base.script)
    answer = _answer_at(script)
    searches = [Call("search", {"query": f"{name} {k}", "k": 5}) for k in keywords]
    return [*script[:answer], *searches, *script[answer:]]


def user_echoes_answer(base: Base, rng: random.Random) -> Script | None:
    """The user repeats the answer after the agent told it."""
    script = list(base.script)
    line = rng.choice([f"{base.answer}, great, thanks!", f"Thank you, so it is {base.answer}."])
    script[-1] = User(f"{line} ###STOP###")
    return script


def unchanged(base: Base, rng: random.Random) -> Script | None:
    """The base itself."""
    return list(base.script)


#: Class name -> (planter, label), in report order.
CLASSES: MappingProxyType[str, tuple[Planter, str]] = MappingProxyType(
    {
        "unread_answer": (unread_answer, "bad"),
        "answer_tool_first": (answer_tool_first, "bad"),
        "answer_said_early": (answer_said_early, "bad"),
        "skipped_reveal": (skipped_reveal, "bad"),
        "guessed_intermediate": (guessed_intermediate, "bad"),
        "wrong_answer": (wrong_answer, "bad"),
        "cite_listed_unopened": (cite_listed_unopened, "bad"),
        "cite_unseen_document": (cite_unseen_document, "bad"),
        "cite_opened_off_topic": (cite_opened_off_topic, "bad"),
        "cite_page_without_answer": (cite_page_without_answer, "bad"),
        "unshown_name_in_closing": (unshown_name_in_closing, "bad"),
        "search_loop_reworded": (search_loop_reworded, "bad"),
        "user_leaks_answer": (user_leaks_answer, "bad"),
        "user_leaks_intermediate": (user_leaks_intermediate, "bad"),
        "unchanged": (unchanged, "good"),
        "reordered_reads": (reordered_reads, "good"),
        "other_page_same_fact": (other_page_same_fact, "good"),
        "find_instead_of_open": (find_instead_of_open, "good"),
        "doc_id_citations": (doc_id_citations, "good"),
        "paraphrased_closing": (paraphrased_closing, "good"),
        "distinct_searches": (distinct_searches, "good"),
        "user_echoes_answer": (user_echoes_answer, "good"),
    }
)
