import json, sys
v = json.load(open(sys.argv[1]))
print(len(v))
