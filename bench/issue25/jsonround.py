import json, sys
v = json.load(open(sys.argv[1]))
s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
print(len(s))
