"""`runner.local_processes`: what `auto` decides and why, flags winning, config validation."""

from __future__ import annotations

import pytest

from trajforge.pipelines.config import BuildConfig, ConfigError, load_config
from trajforge.pipelines.processes import AUTO_MIN_TASKS, plan_processes

HTTP = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "needs_api_key": False}
MULTI = ("--direct_running_mode=multi_processing", "--direct_num_workers=2")


def config(num_tasks: int = 1600, agent: dict | None = None, **extra) -> BuildConfig:
    return BuildConfig.model_validate(
        {
            "domain": "retail",
            "num_tasks": num_tasks,
            "mode": "rollout",
            "roles": {"agent": agent or HTTP},
            **extra,
        }
    )


def test_auto_uses_every_core_for_a_large_http_build():
    plan = plan_processes(config(), ["--runner=FnApiRunner"], cores=2)
    assert (plan.processes, plan.source) == (2, "auto")
    assert plan.beam_args == ("--runner=FnApiRunner", *MULTI)
    assert "2 cores, 1600 tasks" in plan.line() and "bounded by cores" in plan.line()


def test_auto_does_not_depend_on_the_machines_load(monkeypatch):
    """The same config on the same machine runs the same way from one minute to the next."""
    plans = set()
    for load in (0.0, 1.2, 5.0, 40.0):
        monkeypatch.setattr("os.getloadavg", lambda load=load: (load, load, load))
        plans.add(plan_processes(config(), [], cores=8).line())
    assert len(plans) == 1 and "local processes: 4" in plans.pop()  # 64 in flight / 16


@pytest.mark.parametrize(
    ("cfg", "cores", "why"),
    [
        (config(num_tasks=AUTO_MIN_TASKS - 1), 2, "num_tasks"),
        (config(), 1, "one core"),
        (config(agent={"kind": "local"}), 2, "agent (local)"),
        (
            config(
                roles={"agent": HTTP, "judge": {"kind": "scripted", "responder": "judge_approves"}}
            ),
            2,
            "judge (scripted)",
        ),
        (config(concurrency={"max_in_flight": 16}), 2, "max_in_flight"),
    ],
)
def test_auto_stays_in_one_process_where_it_does_not_pay(cfg, cores, why):
    plan = plan_processes(cfg, ["--runner=FnApiRunner"], cores=cores)
    assert plan.processes == 1 and why in plan.reason
    assert plan.beam_args == ("--runner=FnApiRunner",)  # nothing added


def test_auto_keeps_enough_in_flight_per_process():
    plan = plan_processes(config(concurrency={"max_in_flight": 64}), [], cores=16)
    assert plan.processes == 4  # 64 / 16 in flight each, not one per core


def test_never_for_remote_runners():
    args = ["--runner=DataflowRunner", "--project=p"]
    plan = plan_processes(config(runner={"local_processes": 4}), args, cores=8)
    assert plan.processes == 1 and "DataflowRunner" in plan.reason
    assert plan.beam_args == tuple(args)


def test_command_line_flags_win_over_the_config():
    one = ["--runner=FnApiRunner", "--direct_running_mode=in_memory"]
    plan = plan_processes(config(), one, cores=2)
    assert (plan.processes, plan.source, plan.beam_args) == (1, "flags", tuple(one))
    plan = plan_processes(config(runner={"local_processes": 1}), list(MULTI), cores=2)
    assert (plan.processes, plan.source) == (2, "flags")


def test_a_number_in_the_config_is_used_as_given():
    plan = plan_processes(config(num_tasks=10, runner={"local_processes": 3}), [], cores=2)
    assert (plan.processes, plan.source) == (3, "config")
    assert plan.beam_args[-1] == "--direct_num_workers=3"
    plan = plan_processes(config(runner={"local_processes": 1}), [], cores=2)
    assert (plan.processes, plan.beam_args) == (1, ())


def test_runner_is_not_part_of_the_config_hash():
    assert config().config_hash() == config(runner={"local_processes": 2}).config_hash()


@pytest.mark.parametrize("value", ["two", 0, -1, 1.5, True, 1000])
def test_a_bad_value_names_the_field_and_the_fix(tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(
        "domain: retail\nnum_tasks: 10\nroles: {agent: {kind: local}}\n"
        f"runner: {{local_processes: {value!r}}}\n".replace("'", "")
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "runner.local_processes" in str(err.value)
    assert "`auto` or a number of processes" in str(err.value)


def test_a_worker_keeps_its_share_of_the_limits(tmp_path):
    """Beam pickles the stage resources to each worker process: the process count travels
    with them, or every worker would take the whole endpoint limit."""
    import pickle

    from trajforge.pipelines.resources import StageResources

    res = StageResources(config(), str(tmp_path), needs_llm=True, processes=2)
    assert pickle.loads(pickle.dumps(res)).processes == 2
