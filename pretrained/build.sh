#!/usr/bin/env bash
# Rebuilds the training corpora and the packs from scratch: Debian packages of documentation
# (downloaded, unpacked, never installed), concatenated in name order, a fixed selection of
# 64 KiB pieces, then `sep pretrain`. No file of the benchmark corpora (Canterbury, Calgary,
# Silesia, ../shared/corpora) is in these packages. Usage: pretrained/build.sh [OUTDIR]
# (default pretrained/, whose packs the build embeds; the downloads go to target/packs/work);
# needs apt-get, dpkg-deb, python3 and a release build of sep.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-pretrained}
sep=${SEP:-target/release/sep}
work=target/packs/work
mkdir -p "$work/debs" "$work/x"
# The text pack's sources: English prose with some code (Perl's and Python's manuals, the
# Debian reference) and short texts (fortunes).
pkgs=(perl-doc python3.11-doc debian-reference-en fortunes fortunes-min)
(cd "$work/debs" && apt-get download "${pkgs[@]}")
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$work/x"; done
{
  find "$work/x/usr/share/perl" -name '*.pod' | sort | xargs cat
  find "$work/x" -path '*_sources*' -name '*.txt' | sort | xargs cat
  find "$work/x/usr/share/games/fortunes" -type f ! -name '*.dat' ! -name '*.u8' | sort | xargs cat
} > "$work/text-all.txt"
# Every 5th piece of 64 KiB, up to 4 MiB: spread over all the sources.
python3 - "$work/text-all.txt" "$work/text.txt" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
pieces = [data[i:i + 65536] for i in range(0, len(data), 65536)][::5][:64]
open(sys.argv[2], 'wb').write(b''.join(pieces))
PY
desc="Debian bookworm: $(for d in "$work"/debs/*.deb; do dpkg-deb -f "$d" Package Version | paste -sd= ; done | paste -sd' ')"
"$sep" pretrain -f --type text --name text --table-log 20 --history 1M --description "$desc" \
  -o "$out/text.pack" "$work/text.txt"
sha256sum "$out/text.pack"
