#!/usr/bin/env python3
"""Usage: python3 scripts/pco12.py FILE.safetensors...

pcodec level 12 on every tensor of safetensors files (the tensor path's reference).
Needs: pip install numpy pcodec. bf16 tensors are given to pcodec as uint16.
"""
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import sys,json,struct,time,numpy as np
from pcodec import standalone, ChunkConfig
for f in sys.argv[1:]:
    b=open(f,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); base=8+n
    dtm={'F32':np.float32,'F16':np.float16,'BF16':None}
    out=8+n; t=0; tensor=0
    for k,v in h.items():
        if k=='__metadata__': continue
        s,e=v['data_offsets']; raw=b[base+s:base+e]
        dt=dtm[v['dtype']]
        arr=np.frombuffer(raw,dtype=dt) if dt is not None else np.frombuffer(raw,dtype=np.uint16)
        t0=time.time(); c=standalone.simple_compress(arr, ChunkConfig(compression_level=12)); t+=time.time()-t0
        out+=len(c); tensor+=len(raw)
    print(f, 'pcodec-12 ratio %.4f'%(len(b)/out), 'bytes %d'%out, 'compress %.1f MB/s'%(tensor/t/1e6))
