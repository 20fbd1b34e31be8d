import json, sys
with open(sys.argv[1]) as f:
    v = json.load(f)
with open(sys.argv[2], "w") as f:
    json.dump(v, f, separators=(",", ":"), ensure_ascii=False)
