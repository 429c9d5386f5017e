"""Scenario assembly and the one synthesis recipe every kit-built domain shares.

`synthesize` is the whole of task synthesis for a domain on the kit: a seeded rng per
(world seed, persona, domain), a sampled complexity, the plan search, the gold final hash from a
replay on a copy, and a `Task` whose intent lists the plan's task types (checked against the
domain's declared set, so a typo in a builder fails loudly instead of shipping an unknown type).
The domain only says how a plan reads to the user (`instructions`) and may rewrite the scenario
(e.g. a low-recall user who forgets ids) through `finish_scenario`.

The persona is the user: once the plan's actor is chosen, the space's `become` patches make that
actor the persona (name, email) in the task's initial state, and the opening (which states the
name) is rebuilt on the patched world; sub-goals touch no name, so they stay as planned, and the
gold final hash is replayed on the patched world, as every later stage rebuilds it.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from trajforge.generators.domain_kit.planning import Plan, TaskSpace, best_plan
from trajforge.generators.domain_kit.replay import patch_in_place
from trajforge.generators.prompts import STOP_TOKEN
from trajforge.generators.replays import gold_calls, register_template, replay
from trajforge.generators.tooling import TaskRejected, Toolbox
from trajforge.generators.vocabulary import DomainVocabulary
from trajforge.generators.world_templates import known_dump
from trajforge.schemas import (
    InitialState,
    IntentCoordinates,
    Persona,
    StatePatch,
    Task,
    UserScenario,
    derive_seed,
)

DEFAULT_COMPLEXITIES = (1, 2, 3)

#: How the simulated user must behave, whatever the domain (appended to every instructions text).
DISCLOSURE_RULES = (
    "Give information only when the agent needs it, and only what is in your known info; if "
    "asked for anything else, say you don't know - never invent ids, amounts or details. "
    "Confirm an action with 'yes' only if the details the agent lists match your request. "
    "When all your requests are handled, or the agent says they cannot be, end the "
    f"conversation with {STOP_TOKEN}."
)


def numbered_requests(plan: Plan) -> str:
    """The sub-goals' requests as a numbered list, in the order the user makes them."""
    return "\n".join(f"{i}. {g.request}" for i, g in enumerate(plan.goals, 1))


def generic_instructions(
    plan: Plan, persona: Persona, vocabulary: DomainVocabulary, name: str | None = None
) -> str:
    """Instructions for a domain with no framing of its own: who you are, what to ask, the rules.

    `name` is who the user is in the world (an account's owner); the persona's name otherwise.
    """
    return (
        f"You are {name or persona.name}, the {vocabulary.user_role}, talking to the "
        f"{vocabulary.agent_role}. "
        f"Your manner: {persona.communication_style}\n"
        f"Your requests, in this order:\n{numbered_requests(plan)}\n{DISCLOSURE_RULES}"
    )


def owner_instructions(
    collection: str, vocabulary: DomainVocabulary
) -> Callable[[Plan, BaseModel, Persona], str]:
    """A recipe's `instructions` for a domain whose actors are the records of `collection`
    with an `owner` (toy's accounts, phone's lines): the generic instructions, in the name of
    the plan's actor's owner (the persona, once `owner_patches` made it so)."""

    def instructions(plan: Plan, state: BaseModel, persona: Persona) -> str:
        owner = getattr(state, collection)[plan.actor].owner
        return generic_instructions(plan, persona, vocabulary, name=owner)

    return instructions


def owner_patches(
    collection: str, actor: str, persona: Persona, prefix: str
) -> tuple[StatePatch, ...]:
    """Patches making the persona the owner of `collection[actor]` (a `TaskSpace.become`):
    its name, and an email in that name numbered by the id without its `prefix` (`#A1002`
    -> `ann.lee1002@example.com`), so no record shows the world's drawn name."""
    first, _, last = persona.name.lower().partition(" ")
    email = f"{first}.{last.replace(' ', '')}{actor.lstrip(prefix)}@example.com"
    return (
        StatePatch(path=f"{collection}.{actor}.owner", value=persona.name),
        StatePatch(path=f"{collection}.{actor}.email", value=email),
    )


def scenario_from_plan(plan: Plan, instructions: str) -> UserScenario:
    """Known info (opening first, then each sub-goal's), unknowns and "You want to ..." reason."""
    known = dict(plan.opening.known_info)
    for goal in plan.goals:
        known.update(goal.known_info)
    reasons = [g.reason for g in plan.goals]
    reason = "You want to " + (", then ".join(reasons) if len(reasons) > 1 else reasons[0]) + "."
    return UserScenario(
        reason_for_contact=reason,
        known_info=known,
        unknown_info=tuple(u for g in plan.goals for u in g.unknown_info),
        instructions=instructions,
    )


@dataclass(frozen=True)
class SynthesisRecipe:
    """A domain's inputs to `synthesize`: everything that differs between domains."""

    domain: str
    vocabulary: DomainVocabulary
    space: TaskSpace
    toolbox: Toolbox
    #: (plan, initial state, persona) -> the user's instructions text.
    instructions: Callable[[Plan, BaseModel, Persona], str]
    #: (scenario, plan, initial state, persona, rng) -> the final scenario and plan; identity by
    #: default. A rewrite that hides what the user cannot recall (an order id) must add to the
    #: plan the look-ups a real agent needs to find it, so the gold plan never leaks the answer.
    finish_scenario: Callable[
        [UserScenario, Plan, BaseModel, Persona, random.Random], tuple[UserScenario, Plan]
    ] = lambda scenario, plan, state, persona, rng: (scenario, plan)
    complexities: Sequence[int] = DEFAULT_COMPLEXITIES


def _as_persona(
    recipe: SynthesisRecipe,
    initial_state: Callable[[InitialState], BaseModel],
    state: BaseModel,
    plan: Plan,
    persona: Persona,
    seed: int,
) -> tuple[InitialState, BaseModel, Plan]:
    """The task's initial state with the actor made the persona, and the plan's opening rebuilt
    on it (its own rng, so the choice of sign-in does not depend on the plan search). The
    searched world `state` is patched in place when it can be (the caller reads it no more),
    else the patched world is built anew."""
    init = InitialState(seed=seed, patches=recipe.space.become(state, plan.actor, persona))
    patched = state if patch_in_place(state, init.patches) else initial_state(init)
    rng = random.Random(derive_seed(seed, persona.id, recipe.domain, "opening"))
    opening = recipe.space.opening(patched, plan.actor, rng)
    return init, patched, Plan(plan.actor, opening, plan.goals)


def synthesize(
    recipe: SynthesisRecipe,
    initial_state: Callable[[InitialState], BaseModel],
    persona: Persona,
    seed: int,
) -> Task:
    """A task for `persona` over the world generated from `seed`, or TaskRejected."""
    rng = random.Random(derive_seed(seed, persona.id, recipe.domain, "synthesize_task"))
    world = InitialState(seed=seed)
    state = initial_state(world)
    complexity = rng.choice(tuple(recipe.complexities))
    fresh = functools.partial(initial_state, world)  # the plan search's working copies
    plan = best_plan(recipe.space, recipe.toolbox, state, complexity, rng, fresh)
    if plan is None:
        raise TaskRejected("no_feasible_task", f"no actor of world {seed} has a feasible sub-goal")
    init, state, plan = _as_persona(recipe, initial_state, state, plan, persona, seed)
    task_types = tuple(g.task_type for g in plan.goals)
    recipe.vocabulary.check_task_types(task_types, recipe.domain)
    scenario = scenario_from_plan(plan, recipe.instructions(plan, state, persona))
    scenario, plan = recipe.finish_scenario(scenario, plan, state, persona, rng)
    # The replay verification needs (a hash after every action) is the one that gives the
    # gold final hash: it runs once here, on the final plan (candidate look-ups included) over
    # the persona's world, and verify_task reads it from the process memo. Nothing mutates
    # `state` after this: it becomes the process's template of the task's world, and the
    # replay (like the rollout later) runs on a copy-on-write handout of it (world_templates).
    calls = gold_calls(plan.actions)
    dumped = known_dump(initial_state, world, init, state)  # None: dumped once, lazily
    built = register_template(recipe.domain, recipe.toolbox, initial_state, init, state, dumped)
    start = built if built is not None else state
    replayed = replay(recipe.domain, recipe.toolbox, initial_state, init, calls, True, start)
    if replayed.failed is not None:
        raise TaskRejected("gold_action_failed", f"gold plan failed on a fresh world {seed}")
    final_hash = replayed.final
    return Task.create(
        domain=recipe.domain,
        intent=IntentCoordinates(
            persona_id=persona.id,
            domain=recipe.domain,
            task_types=task_types,
            complexity=len(plan.goals),
        ),
        persona=persona,
        scenario=scenario,
        initial_state=init,
        gold_actions=plan.actions,
        expected_outputs=tuple(o for g in plan.goals for o in g.expected_outputs),
        expected_sources=plan.output_sources,
        gold_final_hash=final_hash,
    )
