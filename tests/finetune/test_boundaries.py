"""finetune stands without the Beam layer, and its templates ship with the package."""

import subprocess
import sys

from trajforge.finetune.families import FAMILIES, TEMPLATES_DIR


def test_finetune_never_imports_beam_or_pipelines():
    code = (
        "import sys\n"
        "import trajforge.finetune.cli, trajforge.finetune.sft, trajforge.finetune.evaluate\n"
        "bad = [m for m in sys.modules if m.startswith(('apache_beam', 'trajforge.pipelines'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_family_template_exists():
    for family in FAMILIES.values():
        for name in (family.train_template, family.infer_template):
            assert (TEMPLATES_DIR / name).is_file(), name
