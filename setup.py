"""Install the owner's top-level folders as one namespace, `trajforge.*`.

The folders `schemas/ generators/ verifiers/ pipelines/ finetune/` stay at the repository root
(the owner's layout), but their names are also the names of other PyPI distributions (the RL
library `verifiers` above all). Mapping each folder to `trajforge.<folder>` means the installed
import names never collide. Every sub-package is discovered, so a new one is never left out of
the wheel. Everything else lives in pyproject.toml.
"""

from setuptools import find_packages, setup

TOP_LEVEL = ("schemas", "generators", "verifiers", "pipelines", "finetune")

packages = [f"trajforge.{top}" for top in TOP_LEVEL]
packages += [f"trajforge.{top}.{sub}" for top in TOP_LEVEL for sub in find_packages(top)]

setup(
    packages=packages,
    package_dir={f"trajforge.{top}": top for top in TOP_LEVEL},
)
