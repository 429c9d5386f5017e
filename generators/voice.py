"""The user's voice: how a persona's traits shape what the simulated user says.

A persona is more than a name: a terse, impatient user and a chatty, formal one should not
produce the same sentences, and a trainer learns nothing from a thousand rows that open with the
same words. `UserVoice` turns the trait vector (verbosity, formality, patience, hesitation before
confirming, recall accuracy, mood) into phrasings for each thing a user says in a support chat:
the opening, a piece of known info, a yes to a confirmation, "I don't know", the goodbye. Each
intent has several phrasings per trait level; which one is said is chosen by a seed (the task id
and the utterance's position), so a build is deterministic and rows still differ.

The same voice writes the blueprint drafts (`blueprint_plan.py`) and the scripted user's turns
(`user.py`), and `speaking_rules` is the prose version the LLM user and verbaliser prompts get.
Every phrasing keeps the values it is given verbatim and adds none (no digit, no name), so the
entity and user-fidelity checks hold for the drafts; a yes never contains a refusal word.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from trajforge.schemas import Persona, TraitVector, derive_seed

_CASUAL = ("very_low", "low")
_FORMAL = ("high", "very_high")


#: A name the user asserts ("my name is Ann Lee", "I'm Ann Lee", "this is Ann Lee").
NAME_CLAIM = re.compile(
    r"\b(?i:my name is|i am|i'm|this is|it's|name's)\s+([A-Z][a-z]+(?:[ -][A-Z][\w'-]+)+)"
)


def pick(options: Sequence[str], *key: object) -> str:
    """One of `options`, chosen by the seed derived from `key` (stable across runs)."""
    return random.Random(derive_seed(*key)).choice(tuple(options))


def info_label(label: str) -> str:
    """A known-info label without its parenthetical hint ("order to ask about (#W1)")."""
    return re.sub(r"\s*\([^)]*\)", "", label).replace("_", " ").strip()


def label_parts(label: str) -> tuple[str, str | None]:
    """A known-info label as (noun, verb phrase): "order to cancel" -> ("order", "cancel"),
    "items to return from #W1" -> ("items", "return from #W1"), "zip code" -> ("zip code", None).
    The agent asks "Which order would you like to cancel?"; the user says "The order I want to
    cancel is #W1"."""
    name = info_label(label)
    match = re.fullmatch(r"(\w+(?: \w+)?) to (.+)", name)
    if match and not match.group(1).startswith(("reason", "refund")):
        return match.group(1), match.group(2)
    return name, None


def _statement(label: str, value: str) -> str:
    """The bare statement of one known-info item, lower-case first word."""
    noun, verb = label_parts(label)
    noun, verb = _mine(noun), verb and _mine(verb)
    be = "are" if noun.endswith("s") and not noun.endswith("ss") else "is"
    if verb is not None:
        return f"the {noun} I want to {verb} {be} {value}"
    if len(noun.split()) <= 2:
        return f"my {noun} {be} {value}"
    return f"the {noun} {be} {value}"


def _mine(text: str) -> str:
    """Scenario words in the user's mouth: "your" -> "my", "you" -> "I"."""
    text = re.sub(r"\bthe account's\b", "my account's", text)
    return re.sub(r"\byou\b", "I", re.sub(r"\byour\b", "my", text))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _first_person_background(background: str) -> str | None:
    """ "Ann is a nurse who shops late." -> "I'm a nurse and I shop late." (None if unparsed)."""
    match = re.fullmatch(r".+? is (an? .+?) who (\S+)(.*)\.", background.strip())
    if not match:
        return None
    verb = match.group(2)
    verb = {"is": "am", "has": "have"}.get(verb, verb[:-1] if verb.endswith("s") else verb)
    return f"I'm {match.group(1)} and I {verb}{match.group(3)}"


#: "You want to ..." (a scenario's reason) or an already first-person "Hi, I want to ...".
_WANTS_PREFIX = re.compile(r"^(?:(?:hi|hello),?\s+)?(?:you|i) (?:want|would like) to\s+", re.I)

_GREETINGS = {
    "casual": ("Hey", "Hi there", "Hiya", "Hey there", "Yo", "Hey hey"),
    "neutral": ("Hi", "Hello", "Hi there", "Hello there", "Good morning", "Hey"),
    "formal": ("Good day", "Hello", "Good afternoon", "Good morning", "Dear support team"),
}
_WANTS = {
    "casual": ("I need to", "I wanna", "I gotta", "I'm trying to", "can you help me"),
    "neutral": ("I want to", "I'd like to", "I need to", "I'm hoping to", "I'm looking to"),
    "formal": ("I would like to", "I wish to", "I am writing because I need to", "I hope to"),
}
_MOODS = {
    "angry": (
        "Honestly, I'm pretty annoyed about this.",
        "This whole thing has been a real headache.",
        "I'm fed up, so I hope this gets sorted today.",
    ),
    "frustrated": (
        "I've had trouble with this before, so I hope it goes smoothly this time.",
        "It's been a frustrating week with this.",
        "I've already spent too long on this.",
    ),
    "anxious": (
        "I'm a little worried about getting this right.",
        "I'm nervous I'll mess something up here.",
        "Sorry, I get anxious about these things.",
    ),
    "confused": (
        "I'm not totally sure how this works, so bear with me.",
        "I'm a bit lost with all this.",
        "I hope I'm asking the right place.",
    ),
    "cheerful": (
        "Hope your day's going well!",
        "Thanks in advance, you folks are great!",
        "Happy to be chatting with you!",
    ),
}
#: "I'm short on time" + "so let's keep it quick": two slots, so few rows share the sentence.
_HURRY_WHY = (
    "I'm short on time",
    "I have a meeting soon",
    "I'm between errands",
    "I only have a few minutes",
    "Time is tight for me today",
    "I'm in a bit of a hurry",
    "I need to leave shortly",
)
_HURRY_ASK = (
    "so let's keep it quick.",
    "so quick help would be great.",
    "so please be quick.",
    "so the quicker the better.",
    "so I'd appreciate speed.",
)


@dataclass(frozen=True)
class UserVoice:
    """Phrasings for one persona in one task; `seed` varies them between tasks and turns."""

    traits: TraitVector
    background: str
    seed: int | str

    @classmethod
    def of(cls, persona: Persona, seed: int | str) -> UserVoice:
        return cls(persona.traits, persona.background, seed)

    @property
    def register(self) -> str:
        if self.traits.formality in _CASUAL:
            return "casual"
        return "formal" if self.traits.formality in _FORMAL else "neutral"

    @property
    def hurried(self) -> bool:
        return self.traits.patience in _CASUAL or self.traits.time_pressure in _FORMAL

    @property
    def chatty(self) -> bool:
        return self.traits.verbosity in _FORMAL

    def _pick(self, options: Sequence[str], *key: object) -> str:
        return pick(options, self.seed, "voice", *key)

    def opening(self, reason: str) -> str:
        """The first message: greeting, what they want (from the scenario's reason), and, for
        chatty or moody users, a word about themselves or how they feel."""
        wants = _mine(_WANTS_PREFIX.sub("", reason.strip().rstrip(".")))
        greet = self._pick(_GREETINGS[self.register], "greet")
        want = self._pick(_WANTS[self.register], "want")
        ask = "?" if want.startswith("can you") else "."
        parts = [f"{greet}, {want} {wants}{'' if wants.endswith(('?', '!')) else ask}"]
        about = _first_person_background(self.background)
        if self.chatty and about:
            lead = self._pick(("For context,", "A bit about me:", "Just so you know,", ""), "bg")
            parts.append(_capital(f"{lead} {about}.".strip()))
        mood = _MOODS.get(self.traits.emotional_state)
        if mood and self.traits.verbosity != "very_low":
            parts.append(self._pick(mood, "mood"))
        if self.hurried:
            parts.append(f"{self._pick(_HURRY_WHY, 'hurry')}, {self._pick(_HURRY_ASK, 'hurry2')}")
        return " ".join(parts)

    def give(self, label: str, value: str, turn: int) -> str:
        """One piece of known info, said the persona's way; a low-recall user hedges."""
        statement = _statement(label, value)
        if info_label(label).lower() == "name":
            statement = self._pick(
                (f"my name is {value}", f"I'm {value}", f"this is {value}", f"it's {value}"),
                "name",
            )
        lead = self._pick(_GIVE_LEADS[self.register], "give", turn)
        text = f"{lead} {statement}" if lead else _capital(statement)
        if self.traits.recall_accuracy in _CASUAL and info_label(label).lower() != "name":
            text += self._pick(_HEDGES, "hedge", turn)
        if self.traits.verbosity == "very_high" and info_label(label).lower() != "name":
            text += self._pick(_CHATTY_TAILS, "tail", turn)
        return _capital(text) + "."

    def affirm(self, turn: int) -> str:
        """A yes to a confirmation: hesitant users think first, impatient ones hurry it along,
        distrustful ones add a condition. Never a refusal word (the policy checks read it)."""
        if self.traits.decisiveness in _CASUAL:
            lead = self._pick(_HESITATIONS, "hesitate", turn)
        elif self.hurried:
            lead = self._pick(("", "Fine,", "Okay,", "Alright,"), "hurry-yes", turn)
        else:
            lead = self._pick(("", "Great,", "Perfect,", "Okay,", "Right,"), "yes-lead", turn)
        yes = self._pick(_YESES[self.register], "yes", turn)
        if self.hurried:
            yes += self._pick(
                (", and quickly please", ", let's get it done", ", right away please"), "q"
            )
        text = f"{lead} {yes[0].lower()}{yes[1:]}" if lead else yes
        if self.traits.trust_in_agent in _CASUAL:
            text += self._pick(_CONDITIONS, "trust", turn)
        return _capital(text) + "."

    def decline(self, turn: int) -> str:
        """A "no, not yet" to a confirmation (a user who declines first, then agrees when asked
        again): always a refusal word the policy checks and agents read as one."""
        return self._pick(_DECLINES, "decline", turn)

    def unknown(self, turn: int) -> str:
        """The user does not know what was asked (never invents it)."""
        return self._pick(_UNKNOWN[self.register], "unknown", turn)

    def close(self, reason: str = "") -> str:
        """The goodbye; chatty users thank for what was done (the scenario's reason)."""
        acks, cores, ends = _CLOSES["hurried"] if self.hurried else _CLOSES[self.register]
        parts = (self._pick(acks, "close"), self._pick(cores, "close2"), self._pick(ends, "close3"))
        text = ", ".join(parts)
        wants = _WANTS_PREFIX.sub("", reason.strip().rstrip("."))
        if self.chatty and ":" not in wants and wants != reason.strip().rstrip("."):
            wants = _mine(wants)
            text += f" Thanks again for helping me {wants}."
        return text

    def restate(self, reason: str, turn: int) -> str:
        """The agent wrapped up before serving the request: the user says what it still wants.
        Neither a yes nor a refusal word (the policy checks would read one as an answer)."""
        wants = _mine(_WANTS_PREFIX.sub("", reason.strip().rstrip(".")))
        return f"{self._pick(_RESTATES[self.register], 'restate', turn)} {wants}."

    def nudge(self, turn: int) -> str:
        """When the agent says nothing the user can answer: ask it to go on."""
        return self._pick(_NUDGES[self.register], "nudge", turn)


#: Leads of an answer carry no "yes"/"sure"/"okay": a policy check reads a user turn with one
#: as a confirmation, and an answer to a question is not consent to an action.
_GIVE_LEADS = {
    "casual": ("", "Oh,", "Right,", "So,", "Um,", "Well,", "Hmm,"),
    "neutral": ("", "Well,", "Right,", "So,", "Let me see,", "Here you go:"),
    "formal": ("", "Certainly,", "Gladly,", "Certainly:", "Allow me:", "For your records,"),
}
_HEDGES = (
    ", if I remember correctly",
    ", I think",
    ", at least I believe so",
    ", if my memory serves",
    ", unless I'm mixing things up",
)
_CHATTY_TAILS = (
    ", in case that helps",
    ", I wrote it down somewhere",
    ", I double-checked that one earlier",
    ", as far as I know",
)
_DECLINES = (
    "No, wait, not yet. Let me think about it for a second.",
    "Hold on, not yet, I want to be sure first.",
    "No, don't do that yet, give me a moment.",
    "Wait, I'm not sure yet, hold on.",
)
_HESITATIONS = (
    "Hmm, let me think, okay,",
    "Um, I guess that's right, so",
    "Let me just look that over, alright,",
    "Well, I suppose so,",
    "Uh, okay, I think that's correct, so",
    "Give me a second, right, that matches, so",
)
#: Every yes says "yes": the blueprint requires the word, so a model rewrite that drops the
#: consent (or repeats the previous turn) falls back to the draft.
_YESES = {
    "casual": (
        "Yes, go for it",
        "Oh yes, do it",
        "Yes, sure, go ahead",
        "Yes yes, sounds good",
        "Yes, do it",
    ),
    "neutral": (
        "Yes, please go ahead",
        "Yes, that's right, go ahead",
        "Sounds good, yes, please do",
        "Yes, please proceed",
        "That's correct, yes, go ahead",
    ),
    "formal": (
        "Yes, please proceed",
        "Yes, that is correct, please go ahead",
        "Yes, I confirm",
        "Indeed, yes, please proceed",
        "Yes, you may proceed",
    ),
}
_CONDITIONS = (
    ", as long as those details are exactly right",
    ", provided that is exactly what you listed",
    ", and please make sure it's exactly as you said",
)
_UNKNOWN = {
    "casual": ("No idea, sorry.", "Hmm, I don't know that one.", "Not sure, sorry."),
    "neutral": ("Sorry, I don't know that.", "I'm afraid I don't know.", "I'm not sure, sorry."),
    "formal": ("I am afraid I do not know that.", "Unfortunately I do not have that information."),
}
#: Goodbyes as (acknowledgement, "that's all", sign-off) slots per register.
_CLOSES = {
    "casual": (
        ("Cool", "Awesome", "Great", "Nice", "Sweet", "Perfect"),
        ("that's all", "I'm all set", "that's it for me", "that's everything"),
        ("thanks!", "cheers!", "thanks a bunch!", "thanks a lot!"),
    ),
    "neutral": (
        ("Great", "Perfect", "Alright", "Wonderful", "Okay"),
        ("that's all", "that's everything I needed", "that covers it", "nothing else for today"),
        ("thank you!", "thanks for your help.", "thanks.", "much appreciated."),
    ),
    "formal": (
        ("Thank you kindly", "Excellent", "Very good", "Much obliged", "Splendid"),
        ("that is everything", "that will be all", "nothing further", "that concludes my requests"),
        ("thank you for your assistance.", "I appreciate your help.", "thank you very much."),
    ),
    "hurried": (
        ("Fine", "Okay", "Good", "Right", "Alright", "Finally"),
        ("that's all", "that's it", "all done", "that's everything"),
        ("thanks.", "bye.", "cheers.", "thanks, bye."),
    ),
}
#: Leads of a restated request (the agent said it was done too early).
_RESTATES = {
    "casual": ("Hmm, I still need to", "But I came here to", "Um, I still want to"),
    "neutral": ("Actually, I still need to", "I was hoping to", "My request was to"),
    "formal": ("If I may, I still wish to", "I must point out that I came to", "My request was to"),
}
_NUDGES = {
    "casual": ("So can you sort it out?", "Can you just do it?", "What's next then?"),
    "neutral": ("Could you please take care of my request?", "Can you help me with that?"),
    "formal": ("Could you kindly proceed with my request?", "Would you please handle it?"),
}


def speaking_rules(traits: TraitVector) -> str:
    """The traits as concrete speaking rules for an LLM user (length, tone, patience,
    hesitation, recall): the same behaviour the scripted voice follows."""
    length = {
        "very_low": "Answer in a few words.",
        "low": "Keep every message to one short sentence.",
        "medium": "Write one or two sentences per message.",
        "high": "Write two or three sentences; mention a little about yourself.",
        "very_high": "Write long messages with side remarks about your life.",
    }[traits.verbosity]
    tone = {
        "casual": "Use casual words and contractions.",
        "neutral": "Use a neutral tone.",
        "formal": "Use polite, formal wording.",
    }[UserVoice(traits, "", 0).register]
    rules = [length, tone]
    if traits.patience in _CASUAL or traits.time_pressure in _FORMAL:
        rules.append("You are impatient: push the agent to hurry.")
    if traits.decisiveness in _CASUAL:
        rules.append("Before saying yes to an action, hesitate briefly, then confirm.")
    if traits.recall_accuracy in _CASUAL:
        rules.append(
            "You remember details vaguely: describe things by what they are rather than by "
            "number when you can, and say when you are unsure (never invent a detail)."
        )
    if traits.trust_in_agent in _CASUAL:
        rules.append("Double-check the details the agent lists before agreeing.")
    return " ".join(rules)
