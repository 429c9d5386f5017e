"""A judge rubric from the user's own package: axis -> ((criterion id, yes/no question), ...)."""

RUBRIC = {
    "task_success": (("goal_achieved", "Was the user's goal fully achieved?"),),
    "tone": (
        ("polite", "Was the agent polite throughout?"),
        ("plain_words", "Did the agent avoid jargon and internal field names?"),
    ),
}

BAD_RUBRIC = {"Tone": (("polite", "Polite?"),), "empty_axis": ()}
