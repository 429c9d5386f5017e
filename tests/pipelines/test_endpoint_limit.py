"""One concurrency limit per endpoint and worker process, shared by every stage and role bound
to that backend (baseline, generation, judge), sized by `concurrency.calls_limit`."""

from __future__ import annotations

import asyncio

import pytest

from trajforge.generators.llm.guard import ConcurrencyLimitedLLM
from trajforge.pipelines.config import BuildConfig, ConcurrencyConfig
from trajforge.pipelines.resources import _build_role_clients
from trajforge.schemas import ChatRequest, ChatResponse, Message


def config(judge: dict | None = None, **concurrency) -> BuildConfig:
    roles = {"agent": {"kind": "scripted", "responder": "blueprint"}}
    if judge is not None:
        roles["judge"] = judge
    return BuildConfig.model_validate(
        {"num_tasks": 1, "domain": "retail", "roles": roles, "concurrency": concurrency}
    )


def limiter(client) -> ConcurrencyLimitedLLM:
    inner = client.inner
    while not isinstance(inner, ConcurrencyLimitedLLM):
        inner = inner.inner
    return inner


def test_calls_limit_defaults_to_max_in_flight():
    assert ConcurrencyConfig(max_in_flight=32).calls_limit == 32
    assert ConcurrencyConfig(max_in_flight=256, max_calls_in_flight=16).calls_limit == 16
    with pytest.raises(ValueError, match="max_calls_in_flight"):
        ConcurrencyConfig(max_calls_in_flight=0)


def test_roles_on_one_backend_share_one_limit():
    clients = _build_role_clients(config(max_in_flight=64, max_calls_in_flight=8), None)
    limits = {id(limiter(c)) for c in clients.by_role().values()}
    assert len(limits) == 1
    assert limiter(clients.agent).limit == 8


def test_a_judge_on_its_own_backend_has_its_own_limit():
    judge = {"kind": "scripted", "responder": "judge_approves"}
    clients = _build_role_clients(config(judge=judge, max_in_flight=4), None)
    assert limiter(clients.judge) is limiter(clients.baseline)
    assert limiter(clients.judge) is not limiter(clients.agent)
    assert limiter(clients.agent) is limiter(clients.user)


class Gauge:
    """A slow backend that records how many calls overlap."""

    model = "gauge"

    def __init__(self):
        self.now = self.peak = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return ChatResponse(message=Message(role="assistant", content="ok"), model=self.model)


def test_calls_from_every_stage_count_against_the_one_limit():
    gauge = Gauge()
    shared = ConcurrencyLimitedLLM(gauge, 3)  # what baseline, generate and judge all wrap
    request = ChatRequest(model="gauge", messages=(Message(role="user", content="hi"),))

    async def stages():
        await asyncio.gather(*(shared.complete(request) for _ in range(30)))

    asyncio.run(stages())
    assert gauge.peak == 3


def test_local_worker_processes_share_the_endpoint_limit():
    from trajforge.pipelines.processes import processes_of

    cfg = config(max_in_flight=64, max_calls_in_flight=33)
    assert limiter(_build_role_clients(cfg, None, processes=2).agent).limit == 17  # rounded up
    assert limiter(_build_role_clients(cfg, None, processes=64).agent).limit == 1
    multi = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    assert processes_of(multi) == 2
    for args in ([], ["--direct_num_workers=2"], ["--direct_running_mode=multi_threading"]):
        assert processes_of(args) == 1  # threads share one process
    assert cfg.concurrency.calls_limit == 33  # the config (and its hash) keep what was written
