#!/usr/bin/env bash
# The parsers' system tools, from Debian: Tesseract OCR (scanned PDFs, images, image-only slides) and LibreOffice
# headless (.doc/.xls/.ppt/.odt/.ods/.odp/.rtf -> OOXML). Idempotent: does nothing when they are already there.
# OCR languages: KBQA_INGESTION__OCR_LANGUAGES (default eng; e.g. eng+deu installs tesseract-ocr-deu too).
# Without root or apt-get it only says what is missing: those files then fail with a reason that names the package.
set -euo pipefail
langs=${KBQA_INGESTION__OCR_LANGUAGES:-eng}
pkgs=()
command -v tesseract >/dev/null 2>&1 || pkgs+=(tesseract-ocr)
have_langs=$(tesseract --list-langs 2>/dev/null || true)
IFS='+' read -r -a wanted <<<"$langs"
for lang in "${wanted[@]}"; do
  [ -n "$lang" ] || continue
  grep -qx "$lang" <<<"$have_langs" || pkgs+=("tesseract-ocr-$(tr '_' '-' <<<"${lang,,}")")
done
if ! command -v soffice >/dev/null 2>&1; then
  pkgs+=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)
fi
[ ${#pkgs[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing parser tools from Debian: ${pkgs[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
else
  echo "missing parser tools (scanned PDFs/images or legacy Office files will fail with a reason): ${pkgs[*]}" >&2
  echo "  install them as root: apt-get install --no-install-recommends ${pkgs[*]}" >&2
fi
