#!/usr/bin/env python3
"""Estimates what a "recent values" mode could give on a raw f32 array or a safetensors file:
each value is either one of the last K distinct values (a hit: an adaptive hit flag with the
previous flag as context, then the slot with adaptive counts; slots are reused least recently
used first) or a miss, charged a flat 26.5 bits (about the tensor codec's cost of an f32
weight). Ideal code lengths, no coder; the first 200,000 values.
Usage: python3 scripts/lookback_sim.py FILE..."""
import numpy as np, struct, math, sys
from collections import OrderedDict
def load(f):
    b=open(f,'rb').read()
    if f.endswith('safetensors'):
        n=struct.unpack('<Q',b[:8])[0]; b=b[8+n:]
    return np.frombuffer(b[:len(b)//4*4],dtype=np.uint32)
MISS_BITS=26.5
def sim(vals, K, mode):
    # mode 'mtf': code MTF rank; 'slot': values keep a slot (LRU eviction), code slot id
    bits=0.0; hitc=[[1,1],[1,1]]; prev=0
    rc=np.ones(K); rt=K*1.0
    cache=OrderedDict()  # value -> slot
    free=list(range(K))
    mtf=[]
    for v in vals:
        v=int(v)
        if mode=='mtf':
            hit = v in cache
        else:
            hit = v in cache
        c=hitc[prev]
        p=c[1 if hit else 0]/(c[0]+c[1]); bits+=-math.log2(p); c[1 if hit else 0]+=1
        if hit:
            if mode=='mtf':
                r=mtf.index(v); mtf.pop(r); mtf.insert(0,v)
            else:
                r=cache[v]; cache.move_to_end(v)
            bits+=-math.log2(rc[r]/rt); rc[r]+=1; rt+=1
        else:
            bits+=MISS_BITS
            if mode=='mtf':
                mtf.insert(0,v)
                if len(mtf)>K: mtf.pop()
                cache[v]=1
                if len(cache)>K:
                    # keep in sync with mtf contents
                    cache={x:1 for x in mtf}
                    cache=OrderedDict(cache)
            else:
                if len(cache)>=K:
                    old,slot=cache.popitem(last=False)
                else:
                    slot=len(cache)
                cache[v]=slot
        prev=1 if hit else 0
    return bits/8
for f in sys.argv[1:]:
    a=load(f); a=a[:200000]
    raw=a.size*4
    out=[]
    for K in (16,64,256,1024):
        for mode in ('slot',):  # 'mtf': code move-to-front ranks instead
            out.append('K%d %s %.3fx'%(K,mode,raw/sim(a,K,mode)))
    print(f.split('/')[-1], ' '.join(out))
