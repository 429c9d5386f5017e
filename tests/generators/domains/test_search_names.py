"""What a search conversation has shown its agent (names.py) and what a query means
(query_meaning.py): each rule with a violating and a corrected case."""

from trajforge.generators.domains.search.names import unshown_names
from trajforge.generators.domains.search.query_meaning import query_meaning
from trajforge.schemas import Message, ToolCall

NAMES = frozenset({"zortos", "halmir"})


def _call(name: str, call_id: str, **arguments) -> Message:
    return Message(
        role="assistant", tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),)
    )


def _tool(call_id: str, text: str, name: str = "search") -> Message:
    return Message(role="tool", content=text, tool_call_id=call_id, name=name)


def test_a_token_is_shown_by_a_tool_output_or_user_turn_not_by_the_agent():
    guessed = [Message(role="user", content="who?"), _call("search", "c0", query="Halmir born")]
    assert unshown_names(guessed, NAMES) == [(1, ["halmir"])]
    read = [Message(role="user", content="who?"), _call("search", "c0", query="poet"),
            _tool("c0", "Rise Halmir is a poet."), _call("search", "c1", query="halmir born")]  # fmt: skip
    assert unshown_names(read, NAMES) == []


def test_the_answer_echo_shows_nothing_and_prose_names_are_capitalised():
    echoed = [_call("answer", "c0", text="Halmir"), _tool("c0", "Answer recorded: Halmir", "answer"),
              Message(role="assistant", content="It is Halmir.")]  # fmt: skip
    assert [i for i, _ in unshown_names(echoed, NAMES)] == [0, 2]
    assert unshown_names([Message(role="assistant", content="halmir is no name here")], NAMES) == []


def test_a_name_of_several_words_must_be_shown_whole():
    seen = [_call("search", "c0", query="poet"), _tool("c0", "Zortos Shipping Line employs Ana.")]
    guessed = [*seen, _call("search", "c1", query="Zortos Institute based")]
    assert unshown_names(guessed, NAMES, ["zortos institute"]) == [(2, ["zortos institute"])]
    read = [*seen[:1], _tool("c0", "Ana works for Zortos Institute."), guessed[-1]]
    assert unshown_names(read, NAMES, ["zortos institute"]) == []


def test_query_meaning_ignores_order_punctuation_filler_and_k_but_not_content():
    same = ["Arhal born", "born, Arhal?", "please find Arhal born", "BORN arhal"]
    assert (
        len(
            {
                tuple(query_meaning({"query": q, "k": k}))
                for q, k in zip(same, (3, 5, 8, 10), strict=True)
            }
        )
        == 1
    )
    different = ["Arhal born", "Arhal based", "Arhal 1954", "Arhal Halmir born"]
    assert len({tuple(query_meaning({"query": q})) for q in different}) == 4
