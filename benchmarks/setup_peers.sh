#!/usr/bin/env bash
# Create one virtual environment per peer framework under benchmarks/.venvs/<peer>.
# Their pins conflict with each other and with trajforge, hence separate venvs
# (see benchmarks/README.md). Re-running is cheap: an existing venv whose import works is kept.
# Usage: bash benchmarks/setup_peers.sh [distilabel|curator|data-designer ...]
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENVS="$HERE/.venvs"
PY="${PYTHON:-python3.11}"
mkdir -p "$VENVS"

declare -A PACKAGES=(
  [distilabel]="distilabel==1.5.3 requests openai"
  [curator]="bespokelabs-curator==0.1.31"
  [data-designer]="data-designer==0.9.7"
)
declare -A IMPORTS=(
  [distilabel]="distilabel"
  [curator]="bespokelabs.curator"
  [data-designer]="data_designer"
)

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(distilabel curator data-designer)
status=0
for peer in "${peers[@]}"; do
  venv="$VENVS/$peer"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import ${IMPORTS[$peer]}" 2>/dev/null; then
    echo "[$peer] already installed"; continue
  fi
  echo "[$peer] creating $venv"
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null
  # shellcheck disable=SC2086
  if "$venv/bin/pip" install -q ${PACKAGES[$peer]}; then
    "$venv/bin/python" -c "import ${IMPORTS[$peer]}" && echo "[$peer] ok" || { echo "[$peer] import failed"; status=1; }
  else
    echo "[$peer] pip install failed"; status=1
  fi
done
exit $status
