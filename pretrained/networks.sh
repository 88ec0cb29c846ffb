#!/usr/bin/env bash
# Rebuilds the pre-trained networks from scratch: the corpora (corpus.py), a Python
# environment with JAX on the CPU, the training runs (train.py, resumable: run this again
# after a stop and each run carries on from its checkpoint), the loss curves (plot.py) and
# the integer networks sep runs (export.py). Usage: pretrained/networks.sh
# Writes target/pretrained/: corpus/, TYPE-pac/{ckpt.pkl,log.tsv,curve.svg}, TYPE.net, and
# pretrained/text9.pack (needs target/release/sep).
# Time on the 2-core VM of benches/LOG.md: the corpora about 3 minutes, the text network
# about 0.7 s a step (20,000 steps: about 4 hours).
set -euo pipefail
cd "$(dirname "$0")/.."
env=target/trainenv
py=$env/bin/python
nice python3 pretrained/corpus.py
if [ ! -x "$py" ]; then
  python3 -m venv "$env"
  "$env/bin/pip" install jax==0.10.2 jaxlib==0.10.2 optax==0.2.8 numpy==2.4.6
fi
# The text network: documentation and literary prose equally, some windows with CR LF line
# ends.
nice "$py" pretrained/train.py text --backbone pac --mix prose:1 --crlf 0.15
python3 pretrained/plot.py target/pretrained/text-pac/log.tsv target/pretrained/text-pac/curve.svg \
  "text network (PAC): bits per byte"
"$py" pretrained/export.py text target/pretrained/text.net
sha256sum target/pretrained/text.net
# Level 9's built-in pack: its model with the text network, on the text pack's tables.
head -c 4194304 target/pretrained/corpus/text.train > target/pretrained/text9-train.txt
target/release/sep pretrain -f -q --level 9 --type text --name text9 --base text \
  --net target/pretrained/text.net --description "sep corpus.py text.train, first 4 MiB" \
  -o pretrained/text9.pack target/pretrained/text9-train.txt
sha256sum pretrained/text9.pack | cut -d' ' -f1 > pretrained/text9.pack.sha256
