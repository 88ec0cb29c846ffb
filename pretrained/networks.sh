#!/usr/bin/env bash
# Rebuilds the pre-trained networks from scratch: the corpora (corpus.py), a Python
# environment with JAX on the CPU, the training runs (train.py, resumable: run this again
# after a stop and each run carries on from its checkpoint), the loss curves (plot.py) and
# the integer networks sep runs (export.py). Usage: pretrained/networks.sh
# Writes target/pretrained/: corpus/, TYPE-pac/{ckpt.pkl,log.tsv,curve.svg}, TYPE.net, and
# pretrained/{text9,code9}.pack (needs target/release/sep).
# Time on the 2-core VM of benches/LOG.md: the corpora about 3 minutes, the text network
# about 0.7 s a step (12,250 steps: about 2.5 hours), the code network as much (4,000 steps:
# about 50 minutes), the two packs 2 minutes each.
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
# ends; stopped at step 12,250 of its 20,000-step schedule (its targets were met, and the CPU
# went to the code network).
nice "$py" pretrained/train.py text --backbone pac --mix prose:1 --crlf 0.15 --until 12250
python3 pretrained/plot.py target/pretrained/text-pac/log.tsv target/pretrained/text-pac/curve.svg \
  "text network (PAC): bits per byte"
"$py" pretrained/export.py text target/pretrained/text.net
# The code network: the text network fine-tuned on source code, with text beside (comments and
# documentation are English).
nice "$py" pretrained/train.py code --backbone pac --init text-pac --steps 4000 --lr 1e-3 \
  --warmup 200 --mix text:0.3 --crlf 0.15
python3 pretrained/plot.py target/pretrained/code-pac/log.tsv target/pretrained/code-pac/curve.svg \
  "code network (PAC, from the text network): bits per byte"
"$py" pretrained/export.py code target/pretrained/code.net
sha256sum target/pretrained/text.net target/pretrained/code.net
# Level 9's built-in packs: its model with each network, on the text pack's tables. The text
# pack trains on the first 4 MiB of its corpus; the code pack on 64 pieces of 64 KiB spread
# over its corpus, which is ordered by package (one language after another).
head -c 4194304 target/pretrained/corpus/text.train > target/pretrained/text9-train.txt
python3 - <<'PY'
d = open("target/pretrained/corpus/code.train", "rb").read()
step, out = len(d) // 64, bytearray()
for i in range(64):
    s = d.find(b"\n", i * step) + 1
    out += d[s : d.rfind(b"\n", s, s + 65536) + 1]
open("target/pretrained/code9-train.txt", "wb").write(out)
PY
target/release/sep pretrain -f -q --level 9 --type text --name text9 --base text \
  --net target/pretrained/text.net \
  --description "sep corpus.py text.train, first 4 MiB; text network at step 12,250" \
  -o pretrained/text9.pack target/pretrained/text9-train.txt
target/release/sep pretrain -f -q --level 9 --type code --name code9 --base text \
  --net target/pretrained/code.net \
  --description "sep corpus.py code.train, 64 pieces of 64 KiB; code network at step 4,000" \
  -o pretrained/code9.pack target/pretrained/code9-train.txt
for p in text9 code9; do
  sha256sum pretrained/$p.pack | cut -d' ' -f1 > pretrained/$p.pack.sha256
done
