"""Copy-on-write handouts of a built world against freshly validated worlds, byte for byte.

Every write of every domain runs in chains of random calls (valid and invalid arguments, so
failing calls and their `restore_whole` undo are included) twice: on a handout of a template,
through `LiveDump(start=handout)` (the template's dump, parts and hash as the first version,
entries privatised by `Toolbox.execute`), and on a freshly validated world through a plain
`LiveDump`. Observation, error, diff, held dump, hash and the final state must be identical,
and the template's dump must be byte for byte what it was before the run. The same holds for
toolboxes whose writes declare no touches or whose declarations fail (the whole copy is
materialised), and for the plan search's journalled undo.
"""

from __future__ import annotations

import functools
import json
import random
import threading
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from tests.generators.test_write_touches import ARGUMENTS
from trajforge.generators.domains import get_domain
from trajforge.generators.live_dump import LiveDump
from trajforge.generators.personas import sample_persona
from trajforge.generators.replays import MEMO, template_of
from trajforge.generators.tooling import TaskRejected, Toolbox, tool
from trajforge.generators.world_templates import (
    TEMPLATES,
    WorldTemplate,
    WorldTemplates,
    can_share,
)
from trajforge.schemas import InitialState, ToolCall, content_hash


def _text(state: BaseModel) -> str:
    return json.dumps(state.model_dump(mode="json"))


def _rewrapped(toolbox: Toolbox, touches: Any) -> Toolbox:
    """The same tools with their `touches` replaced (None: declare nothing)."""

    def wrap(fn):
        if not getattr(fn, "__tool_touches__", None):
            return fn

        @functools.wraps(fn)
        def write(*args, **kwargs):
            return fn(*args, **kwargs)

        return tool(fn.__tool_kind__, touches=touches)(write)

    return Toolbox([wrap(fn) for fn in toolbox.functions()])


def _failing_declaration(state: Any, arguments: dict[str, Any]):
    raise KeyError("a declaration that fails on these arguments")


def _run_chains(domain, toolbox: Toolbox, seeds: range, steps: int, rng: random.Random):
    writes = [s.name for s in toolbox.specs if s.mutates_state]
    outcomes: dict[str, set[bool]] = {w: set() for w in writes}
    for seed in seeds:
        init = InitialState(seed=seed)
        template = WorldTemplate(domain.initial_state(init))
        frozen = _text(template.state)
        assert template.dumped().hash == content_hash(json.loads(frozen))
        assert json.dumps(template.dumped().dumped) == frozen
        handout = template.handout()
        cow, cow_live = handout.state, LiveDump(start=handout)
        fresh, fresh_live = domain.initial_state(init), LiveDump()
        assert cow_live.state_hash(cow) == fresh_live.state_hash(fresh)
        for step in range(steps):
            name = rng.choice(writes)
            arguments = ARGUMENTS[domain.name](name, fresh, rng)
            call = ToolCall(id=f"c{step}", name=name, arguments=arguments)
            got = cow_live.execute(toolbox, cow, call)
            want = fresh_live.execute(toolbox, fresh, call)
            assert (got.observation, got.error, got.mutating, got.diff) == (
                want.observation,
                want.error,
                want.mutating,
                want.diff,
            ), call
            assert json.dumps(got.state_after) == json.dumps(want.state_after), call
            assert _text(cow) == _text(fresh), call
            assert cow_live.state_hash(cow) == fresh_live.state_hash(fresh), call
            assert cow_live.state_hash(cow) == content_hash(fresh.model_dump(mode="json"))
            assert _text(template.state) == frozen, f"{call} changed the template"
            outcomes[name].add(got.error is None)
        assert json.dumps(template.dumped().dumped) == frozen
    return outcomes


@pytest.mark.parametrize("name", ["retail", "toy", "search"])
def test_handouts_equal_fresh_worlds_and_leave_the_template_unchanged(name):
    domain = get_domain(name)
    outcomes = _run_chains(
        domain, domain.toolbox, range(20 if name == "retail" else 30), 12, random.Random(6)
    )
    assert all(outcomes.values()), outcomes  # every write ran
    assert sum(len(o) == 2 for o in outcomes.values()) >= len(outcomes) - 1, outcomes


@pytest.mark.parametrize("touches", [None, _failing_declaration])
@pytest.mark.parametrize("name", ["retail", "toy"])
def test_writes_without_a_usable_declaration_materialise_the_copy(name, touches):
    domain = get_domain(name)
    toolbox = _rewrapped(domain.toolbox, touches)
    assert not toolbox.declares_touches or touches is not None
    _run_chains(domain, toolbox, range(20), 4, random.Random(7))  # short: a failed call
    # restores the whole copy (`restore_whole`), after which it shares nothing


def test_a_journalled_undo_on_a_handout_restores_it_and_spares_the_template():
    """The plan search's path: outlined writes (`hold=False`) undone last first."""
    domain = get_domain("retail")
    rng = random.Random(8)
    writes = [s.name for s in domain.toolbox.specs if s.mutates_state]
    for seed in range(8):
        template = WorldTemplate(domain.initial_state(InitialState(seed=seed)))
        frozen = _text(template.state)
        handout = template.handout()
        live = LiveDump(hold=False, journal=True, start=handout)
        for step in range(10):
            name = rng.choice(writes)
            arguments = ARGUMENTS["retail"](name, handout.state, rng)
            live.execute(
                domain.toolbox,
                handout.state,
                ToolCall(id=f"u{step}", name=name, arguments=arguments),
            )
        live.undo_all(handout.state)
        assert _text(handout.state) == frozen
        assert _text(template.state) == frozen


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    tags: list[str] = []


class World(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: dict[str, Item]
    counts: dict[str, int]
    rows: list[Item]
    head: Item
    note: str | None = None


def _world() -> World:
    return World(
        items={"a": Item(name="A", tags=["x"]), "b": Item(name="B")},
        counts={"a": 1},
        rows=[Item(name="r0"), Item(name="r1")],
        head=Item(name="H"),
    )


def test_privatise_copies_exactly_the_touched_entries():
    template = WorldTemplate(_world())
    cow = template.handout()
    state = cow.state
    assert state.items is not template.state.items and state.rows is not template.state.rows
    assert state.items["a"] is template.state.items["a"] and state.head is template.state.head
    cow.privatise(state, [("items", "a", "tags")])
    assert state.items["a"] is not template.state.items["a"]
    assert state.items["b"] is template.state.items["b"]
    state.items["a"].tags.append("y")
    cow.privatise(state, [("rows", "1")])  # a list's entries go together
    assert all(r is not t for r, t in zip(state.rows, template.state.rows, strict=True))
    cow.privatise(state, [("head",)])
    state.head.name = "changed"
    state.counts["a"] = 5  # the copy's own dict
    assert _text(template.state) == _text(_world())
    assert not cow.whole
    cow.privatise(state, [("unknown", "x")])  # a path off the model: everything
    assert cow.whole and state.items["b"] is not template.state.items["b"]


def test_only_plain_models_can_be_shared():
    class Bag(BaseModel):
        tags: set[str]

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        x: int

    assert can_share(_world())
    assert not can_share(Bag(tags={"a"}))
    assert not can_share(Open(x=1, y=[1]))
    assert not can_share({"a": 1})
    assert WorldTemplates().share("k", Bag(tags={"a"})) is None


def test_the_cache_is_bounded_and_keeps_the_recent_templates():
    cache = WorldTemplates(maxsize=3)
    for key in "abcd":
        cache.share(key, _world())
    assert cache.get("a") is None and cache.get("b") is not None
    cache.share("e", _world())  # evicts c, the least recently used
    assert cache.get("c") is None and cache.get("b") is not None


def test_concurrent_first_dumps_agree():
    template = WorldTemplate(get_domain("retail").initial_state(InitialState(seed=3)))
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(template.dumped())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s is seen[0] for s in seen)


def _fresh(domain, init: InitialState) -> BaseModel:
    """`initial_state(init)` validated anew, whatever templates this process holds."""
    TEMPLATES.enabled = False
    try:
        return domain.initial_state(init)
    finally:
        TEMPLATES.enabled = True


def test_retail_initial_state_takes_the_template_once():
    """The first `initial_state` after synthesis is the template itself (no validation),
    forgotten by the cache; the next one is built anew, equal to it."""
    domain = get_domain("retail")
    task = domain.synthesize_task(sample_persona(2), 2)
    template = template_of(domain, task.initial_state)
    assert template is not None
    first = domain.initial_state(task.initial_state)
    assert first is template.state and template_of(domain, task.initial_state) is None
    second = domain.initial_state(task.initial_state)
    assert second is not first and _text(second) == _text(first)


@pytest.mark.parametrize("name", ["retail", "toy"])
def test_synthesis_registers_a_template_equal_to_a_fresh_world(name):
    """The rollout's world is now synthesis's searched and persona-patched state: it must be
    the world `initial_state` builds, and the gold replay's hashes those of a fresh world."""
    domain = get_domain(name)
    checked = 0
    for seed in range(40):
        MEMO.clear()
        try:
            task = domain.synthesize_task(sample_persona(seed), seed)
        except TaskRejected:
            continue
        template = template_of(domain, task.initial_state)
        assert template is not None
        fresh = _fresh(domain, task.initial_state)
        assert _text(template.state) == _text(fresh)
        assert template.dumped().hash == content_hash(fresh.model_dump(mode="json"))
        assert json.dumps(template.dumped().dumped) == _text(fresh)  # a plain-data start too
        if name == "retail":  # started from the plain data: the untouched part is that data
            plain = domain.initial_dump(InitialState(seed=task.initial_state.seed))
            assert template.dumped().dumped["products"] is plain["products"]
        checked += 1
    assert checked >= 20
    TEMPLATES.clear()


@pytest.mark.parametrize("agent_kind", ["clumsy", "oracle", "reads"])
def test_rollouts_on_handouts_equal_rollouts_on_fresh_worlds(agent_kind, provenance):
    """The rollout takes synthesis's template (a hit, then forgotten) and gives the very
    trajectories a rollout on a freshly validated world gives (templates off)."""
    from tests.generators.test_rollout import AGENTS, _retail_tasks, rollout
    from trajforge.generators.user import ScriptedUser

    domain, tasks = _retail_tasks(5)

    def run_all():
        out = []
        for task in tasks:
            agent = AGENTS[agent_kind](task)
            traj = rollout(task, domain, agent, ScriptedUser(task), provenance, max_turns=4)
            out.append(traj.to_json())
        return out

    assert all(template_of(domain, t.initial_state) is not None for t in tasks)
    on_handouts = run_all()
    assert all(template_of(domain, t.initial_state) is None for t in tasks), "taken"
    TEMPLATES.enabled = False
    try:
        assert run_all() == on_handouts
    finally:
        TEMPLATES.enabled = True


def test_retail_plain_worlds_are_their_dumps():
    """`RetailDomain.initial_dump`: the generated plain data is the validated world's dump,
    key order included, on every seed tried (templates start from it instead of a dump)."""
    domain = get_domain("retail")
    for seed in range(300):
        init = InitialState(seed=seed)
        assert json.dumps(domain.initial_dump(init)) == _text(domain.initial_state(init)), seed
    patched = InitialState(seed=1, patches=[{"path": "users.x.email", "value": "a@b.c"}])
    assert domain.initial_dump(patched) is None
