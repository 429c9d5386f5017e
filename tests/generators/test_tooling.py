"""The tool boundary: schemas from signatures, and every malformed call becomes an observation."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from trajforge.generators.tooling import (
    Toolbox,
    ToolError,
    apply_patches,
    spec_from_function,
    state_diff,
    state_hash,
    tool,
)
from trajforge.schemas import StatePatch, ToolCall


class Shelf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    books: dict[str, int]
    log: list[str] = []


@tool("read")
def count_books(state: Shelf, title: str) -> int:
    """Count copies of a book on the shelf.

    Args:
        title: The book's title, e.g. 'Dune'.
    """
    if title not in state.books:
        raise ToolError(f"no book '{title}'")
    return state.books[title]


@tool("write")
def add_books(
    state: Shelf, title: str, copies: int, condition: Literal["new", "used"] = "new"
) -> dict:
    """Add copies of a book.

    Args:
        title: The book's title.
        copies: How many copies to add; must be positive.
            A second line continues the description.
        condition: Whether the copies are new or used.
    """
    state.log.append(f"add {title}")  # mutate first, then fail: the boundary must undo this
    if copies <= 0:
        raise ToolError("copies must be positive")
    state.books[title] = state.books.get(title, 0) + copies
    return {"title": title, "copies": state.books[title]}


@tool("write")
def remove_titles(state: Shelf, titles: list[str]) -> str:
    """Remove every copy of the given titles.

    Args:
        titles: Titles to remove.
    """
    for t in titles:
        state.books.pop(t, None)
    return "ok"


TOOLBOX = Toolbox([count_books, add_books, remove_titles])


def call(name: str, **arguments) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


@pytest.fixture
def shelf() -> Shelf:
    return Shelf(books={"Dune": 2, "Emma": 1})


def test_schema_comes_from_signature_and_docstring():
    spec = spec_from_function(add_books)
    params = spec.parameters
    assert spec.name == "add_books"
    assert spec.description == "Add copies of a book."
    assert spec.kind == "write" and spec.mutates_state
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert sorted(params["required"]) == ["copies", "title"]
    assert params["properties"]["copies"]["type"] == "integer"
    assert params["properties"]["copies"]["description"].endswith(
        "A second line continues the description."
    )
    assert params["properties"]["condition"]["enum"] == ["new", "used"]
    assert params["properties"]["condition"]["default"] == "new"
    assert "title" not in params["properties"]["title"]
    list_schema = spec_from_function(remove_titles).parameters["properties"]["titles"]
    assert list_schema["type"] == "array" and list_schema["items"] == {"type": "string"}
    assert spec_from_function(count_books).mutates_state is False
    assert TOOLBOX.spec("count_books").openai_schema()["function"]["name"] == "count_books"


def test_undecorated_function_is_not_a_tool():
    def plain(state, x: int) -> int:
        """Args:
        x: a number.
        """
        return x

    with pytest.raises(TypeError, match="not a tool"):
        spec_from_function(plain)


def test_successful_read_renders_result_and_records_no_diff(shelf):
    out = TOOLBOX.execute(shelf, call("count_books", title="Dune"))
    assert (out.observation, out.error, out.diff, out.mutating) == ("2", None, (), False)


@pytest.mark.parametrize(
    ("tool_call", "error", "fragment"),
    [
        (
            ToolCall(id="c", name="count_books", parse_error="Expecting value", raw_arguments="{"),
            "parse_error",
            "could not parse arguments",
        ),
        (call("burn_books", title="Dune"), "unknown_tool", "unknown tool 'burn_books'"),
        (call("count_books", title=5), "invalid_arguments", "title"),
        (call("add_books", title="Dune", copies="many"), "invalid_arguments", "copies"),
        (call("add_books", title="Dune", copies=1, condition="shiny"), "invalid_arguments", ""),
        (call("count_books", title="Dune", shelf="top"), "invalid_arguments", "shelf"),
        (call("count_books"), "invalid_arguments", "title"),
        (call("count_books", title="Ulysses"), "tool_error", "no book 'Ulysses'"),
    ],
)
def test_malformed_calls_become_error_observations(shelf, tool_call, error, fragment):
    before = state_hash(shelf)
    out = TOOLBOX.execute(shelf, tool_call)  # never raises
    assert out.error == error
    assert out.observation.startswith("Error: ")
    assert fragment in out.observation
    assert out.diff == ()
    assert state_hash(shelf) == before


def test_unknown_tool_lists_known_tools(shelf):
    out = TOOLBOX.execute(shelf, call("nope"))
    assert "add_books, count_books, remove_titles" in out.observation


def test_failed_write_leaves_state_unchanged(shelf):
    before = shelf.model_dump()
    out = TOOLBOX.execute(shelf, call("add_books", title="Dune", copies=0))
    assert out.error == "tool_error" and out.mutating
    assert out.observation == "Error: copies must be positive"
    assert shelf.model_dump() == before  # the log append before the raise was undone


def test_successful_write_records_state_diff(shelf):
    out = TOOLBOX.execute(shelf, call("add_books", title="Dune", copies=3))
    assert out.error is None and out.mutating
    assert '"copies": 5' in out.observation
    changes = [(d.path, d.before, d.after) for d in out.diff]
    assert changes == [("books.Dune", 2, 5), ("log", [], None), ("log[0]", None, "add Dune")]
    assert shelf.books["Dune"] == 5


def test_write_that_changes_nothing_has_empty_diff(shelf):
    out = TOOLBOX.execute(shelf, call("remove_titles", titles=["Missing"]))
    assert out.error is None and out.mutating and out.diff == ()


def test_state_diff_and_hash_are_order_independent():
    a = Shelf(books={"Dune": 1, "Emma": 2})
    b = Shelf(books={"Emma": 2, "Dune": 1})
    assert state_hash(a) == state_hash(b)
    assert state_diff(a.model_dump(), b.model_dump()) == ()
    assert state_hash(a) != state_hash(Shelf(books={"Dune": 1, "Emma": 3}))


def test_apply_patches_returns_patched_copy(shelf):
    patched = apply_patches(shelf, [StatePatch(path="books.Dune", value=9)])
    assert patched.books["Dune"] == 9 and shelf.books["Dune"] == 2


@pytest.mark.parametrize("name", ["retail", "search", "toy"])
def test_read_tools_never_mutate_the_state(name):
    """`LiveDump` keeps a write's dump across later reads: every read the gold plans make
    leaves the dumped state as it was (each read tool is called at least once)."""
    from trajforge.generators.domains import DOMAINS, get_domain
    from trajforge.generators.personas import sample_persona
    from trajforge.generators.tooling import TaskRejected

    assert name in DOMAINS
    domain = get_domain(name)
    reads_seen = set()
    for seed in range(12):
        try:
            task = domain.synthesize_task(sample_persona(seed), seed)
        except TaskRejected:
            continue
        state = domain.initial_state(task.initial_state)
        for i, action in enumerate(task.gold_actions):
            for spec in domain.toolbox.specs:  # every read tool, with this action's arguments
                if spec.kind != "read":
                    continue
                args = {
                    k: v for k, v in action.arguments.items() if k in spec.parameters["properties"]
                }
                before = state.model_dump(mode="json")
                domain.toolbox.execute(state, ToolCall(id="r", name=spec.name, arguments=args))
                assert state.model_dump(mode="json") == before, spec.name
                reads_seen.add(spec.name)
            domain.toolbox.execute(
                state, ToolCall(id=f"g{i}", name=action.name, arguments=action.arguments)
            )
    assert reads_seen == {s.name for s in domain.toolbox.specs if s.kind == "read"}
