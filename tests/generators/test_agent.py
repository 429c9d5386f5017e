import asyncio

from trajforge.generators.agent import LLMAgent, OracleAgent
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.user import asks_confirmation
from trajforge.schemas import Message, SamplingParams, ToolCall


def test_llm_agent_sends_tools_and_seed_and_reports_cost(toy_domain):
    call = ToolCall(id="c1", name="get_account", arguments={"account_id": "#A1001"})
    llm = ScriptedLLM(replies=[Message(role="assistant", tool_calls=(call,))])
    agent = LLMAgent(llm, "teacher", SamplingParams(max_tokens=32))
    history = [Message(role="system", content="policy"), Message(role="user", content="hi")]
    turn = asyncio.run(agent.act(history, toy_domain.toolbox.specs, seed=5))
    assert turn.message.tool_calls == (call,)
    request = llm.requests[0]
    assert request.model == "teacher" and request.seed == 5
    assert {t.name for t in request.tools} == {
        "find_account_by_email",
        "get_account",
        "deposit",
        "transfer_to_human_agents",
    }
    assert request.sampling.max_tokens == 32 and turn.cost.llm_calls == 1


def test_oracle_emits_gold_calls_in_order_then_states_outputs(toy_task, toy_domain):
    oracle = OracleAgent(toy_task)
    history = [Message(role="user", content="hi")]
    names, prompts = [], []
    for _ in toy_task.gold_actions:
        turn = asyncio.run(oracle.act(history, toy_domain.toolbox.specs, seed=0))
        if turn.message.content:  # a write: the oracle asks for a yes first
            prompts.append(turn.message.content)
            history += [turn.message, Message(role="user", content="yes")]
            turn = asyncio.run(oracle.act(history, toy_domain.toolbox.specs, seed=0))
        (call,) = turn.message.tool_calls
        names.append(call.name)
        history += [turn.message, Message(role="tool", content="{}", tool_call_id=call.id)]
    assert names == [a.name for a in toy_task.gold_actions]
    assert len(prompts) == 1 and asks_confirmation(prompts[0]) and "deposit" in prompts[0]
    final = asyncio.run(oracle.act(history, toy_domain.toolbox.specs, seed=0)).message
    assert not final.tool_calls and "125.50" in final.content


def _assistant_texts(task, domain, agent, provenance):
    from trajforge.generators.rollout import run_rollout
    from trajforge.generators.user import ScriptedUser

    trajectory = asyncio.run(
        run_rollout(task, domain, agent, ScriptedUser(task), seed=1, provenance=provenance)
    )
    return [m.content for m in trajectory.messages if m.role == "assistant" and m.content]


def test_oracle_for_speaks_with_the_given_domains_phrasing_even_under_another_name(provenance):
    from trajforge.generators.agent import oracle_for
    from trajforge.generators.domains.retail import RetailDomain
    from trajforge.generators.personas import sample_persona

    retail = RetailDomain()
    task = retail.synthesize_task(sample_persona(3), 3)
    renamed = task.model_copy(update={"domain": "outlet"})  # a plugin domain's name
    builtin = _assistant_texts(task, retail, OracleAgent(task), provenance)
    generic = _assistant_texts(renamed, retail, OracleAgent(renamed), provenance)
    plugged = _assistant_texts(renamed, retail, oracle_for(renamed, retail), provenance)
    assert plugged == builtin
    assert generic != builtin  # by name alone, "outlet" finds no table: generic phrases
