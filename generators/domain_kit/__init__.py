"""The domain kit: generic task synthesis, so a new domain writes only what is its own.

A domain on the kit supplies (see generators/domains/toy/ for a complete small example):

- sub-goal builders, one per task type: `(state, actor, rng, claimed) -> SubGoal | None`, each
  grounded in what the state holds, returning gold actions built with `act(...)`;
- a `TaskSpace`: the builders table, the actors (who may contact the agent) and each actor's
  `Opening` (e.g. the authentication lookup and the info the user gives for it);
- a `SynthesisRecipe` naming the domain, its vocabulary, space, toolbox and instructions text.

`synthesize(recipe, domain.initial_state, persona, seed)` then does the rest: the seeded plan
search (`best_plan`: leading task type drawn uniformly, sub-goals replayed on a working copy so
later ones see earlier effects), the gold final hash (`gold_final_hash`: a replay through
`Toolbox.execute` on a copy, exactly as the outcome check replays), scenario assembly
(`scenario_from_plan`) and the `Task` record. Write tools declare which entries they may
mutate with `entry`, `field` or `nothing` (touches.py), so a write re-dumps only those.
"""

from trajforge.generators.domain_kit.assembly import (
    DISCLOSURE_RULES,
    SynthesisRecipe,
    generic_instructions,
    numbered_requests,
    owner_instructions,
    owner_patches,
    scenario_from_plan,
    synthesize,
)
from trajforge.generators.domain_kit.goals import Opening, SubGoal, SubGoalBuilder, act
from trajforge.generators.domain_kit.planning import Plan, TaskSpace, best_plan, plan_actor
from trajforge.generators.domain_kit.replay import copy_state, gold_final_hash, run_actions
from trajforge.generators.domain_kit.touches import entry, field, nothing

__all__ = [
    "owner_instructions",
    "owner_patches",
    "DISCLOSURE_RULES",
    "Opening",
    "Plan",
    "SubGoal",
    "SubGoalBuilder",
    "SynthesisRecipe",
    "TaskSpace",
    "act",
    "best_plan",
    "copy_state",
    "entry",
    "field",
    "generic_instructions",
    "gold_final_hash",
    "nothing",
    "numbered_requests",
    "plan_actor",
    "run_actions",
    "scenario_from_plan",
    "synthesize",
]
