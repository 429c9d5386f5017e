"""SFT checkpoints: trainable weights, optimizer, scheduler and the step, for exact resume.

The batch schedule is a pure function of (data, seed, step), so a checkpoint needs no data
cursor: resuming recomputes the schedule and skips the steps already taken.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trajforge.finetune.modeling import load_trainable_state, trainable_state

CHECKPOINTS = "checkpoints"


def checkpoint_dir(output: Path, step: int) -> Path:
    return output / CHECKPOINTS / f"step-{step:07d}"


def save_checkpoint(output: Path, step: int, model: Any, optimizer: Any, scheduler: Any) -> Path:
    """Write the checkpoint for `step`; the `state.json` written last marks it complete."""
    # lazy, measured start-up cost: torch ~1.4 s
    import torch

    path = checkpoint_dir(output, step)
    path.mkdir(parents=True, exist_ok=True)
    torch.save(trainable_state(model), path / "trainable.pt")
    torch.save(
        {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()},
        path / "optim.pt",
    )
    (path / "state.json").write_text(json.dumps({"step": step}))
    return path


def latest_checkpoint(output: Path) -> Path | None:
    done = sorted(p.parent for p in (output / CHECKPOINTS).glob("step-*/state.json"))
    return done[-1] if done else None


def load_checkpoint(path: Path, model: Any, optimizer: Any, scheduler: Any) -> int:
    """Restore weights, optimizer and scheduler from `path`; returns the step it was taken at."""
    # lazy, measured start-up cost: torch ~1.4 s
    import torch

    load_trainable_state(model, torch.load(path / "trainable.pt", weights_only=True))
    optim = torch.load(path / "optim.pt", weights_only=False)
    optimizer.load_state_dict(optim["optimizer"])
    scheduler.load_state_dict(optim["scheduler"])
    return int(json.loads((path / "state.json").read_text())["step"])
