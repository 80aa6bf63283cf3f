import sys,re
def parse(ptx):
    lines=ptx.split('\n'); pre=[]; entries=[]; i=0
    while i<len(lines):
        l=lines[i]
        m=re.match(r'^(?:\.visible |\.weak )?\.entry ([A-Za-z0-9_$]+)',l)
        if m:
            j=i
            while lines[j]!='}': j+=1
            entries.append((m.group(1),'\n'.join(lines[i:j+1]))); pre.append(('E',m.group(1))); i=j+1; continue
        pre.append(('L',l)); i+=1
    return pre,dict(entries)
def piece(pre,ents,names):
    names=set(names); out=[]
    for k,v in pre:
        if k=='E':
            if v in names: out.append(ents[v])
        else:
            m=re.match(r'^\.visible \.global .* __xlog_abi_([A-Za-z0-9_$]+)\[',v)
            if m and m.group(1) not in names: continue
            m=re.match(r'^\s*// \.globl\s+(\S+)',v)
            if m and m.group(1) in ents and m.group(1) not in names: continue
            out.append(v)
    return '\n'.join(out)
if __name__=='__main__':
    ptx=open(sys.argv[1]).read(); pre,ents=parse(ptx)
    print(len(ents), file=sys.stderr)
    pat=sys.argv[2]; out=sys.argv[3]
    names=[n for n in ents if re.fullmatch(pat,n)]
    print(names if len(names)<10 else len(names), file=sys.stderr)
    open(out,'w').write(piece(pre,ents,names))
