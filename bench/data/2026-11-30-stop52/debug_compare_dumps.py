import numpy as np, sys
C='/tmp/dump'; G='/tmp/g3/dump'
def load(d, dev, k, name):
    v=np.fromfile(f'{d}/{dev}_{k}_{name}_vals.bin', dtype='<f8')
    rp=np.fromfile(f'{d}/{dev}_{k}_{name}_rowptr.bin', dtype='<u8')
    ci=np.fromfile(f'{d}/{dev}_{k}_{name}_col.bin', dtype='<u4')
    sh=open(f'{d}/{dev}_{k}_{name}_shape.txt').read().split()
    return v,rp,ci,[int(x) for x in sh]
for k in range(8):
    for name in ['a','p','ac']:
        try:
            c=load(C,'cpu',k,name); g=load(G,'gpu',k,name)
        except FileNotFoundError as e:
            continue
        same_pat = c[3]==g[3] and np.array_equal(c[1],g[1]) and np.array_equal(c[2],g[2])
        if not same_pat:
            print(k,name,'pattern differs', c[3], g[3]); continue
        d=c[0]!=g[0]
        print(k,name,c[3],'values',len(c[0]),'differ',int(d.sum()), 'max abs diff', float(np.max(np.abs(c[0]-g[0]))) if d.any() else 0)
print('---')
c=load(C,'cpu',0,'a'); g=load(G,'gpu',0,'a')
v,rp,ci,sh=c
idx=np.nonzero(c[0]!=g[0])[0]
for i in idx:
    blk=i//9; e=i%9
    row=np.searchsorted(rp, blk, side='right')-1
    col=ci[blk]
    # diagonal value of the row
    dblk=[b for b in range(rp[row],rp[row+1]) if ci[b]==row][0]
    print('block row',row,'col',col,'entry',e, 'cpu',repr(c[0][i]),'gpu',repr(g[0][i]), 'diag entry', c[0][dblk*9+(e//3)*4])
