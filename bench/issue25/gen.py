"""Issue 25 data files (under /tmp, never committed): a 200 MB Apache access log, a
100 MB JSON document (an array of records) and a 100 MB CSV file with quoted fields."""
import json
import random

random.seed(7)
paths = ["/", "/index.html", "/api/v1/users", "/img/logo.png", "/login", "/search?q=leash", "/static/app.js"]
agents = ['"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"', '"curl/8.5.0"', '"Googlebot/2.1"']
with open("/tmp/i25_access.log", "w") as f:
    n = 0
    while n < 200_000_000:
        i = random.randrange(1 << 24)
        line = (
            f'10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255} - - [03/Dec/2026:10:{i % 60:02d}:{i % 60:02d} +0000] '
            f'"GET {random.choice(paths)} HTTP/1.1" {random.choice([200, 200, 200, 200, 304, 404, 500])} '
            f'{random.randint(100, 99999)} "-" {random.choice(agents)}\n'
        )
        f.write(line)
        n += len(line)
with open("/tmp/i25_doc.json", "w") as f:
    f.write("[")
    n = 0
    first = True
    while n < 100_000_000:
        d = {"id": n, "name": "user %d" % n, "email": "u%d@example.com" % n, "score": random.random() * 100,
             "tags": ["a", "bb", "ccc"], "active": n % 3 == 0}
        s = json.dumps(d, separators=(",", ":"))
        if not first:
            f.write(",")
            n += 1
        f.write(s)
        n += len(s)
        first = False
    f.write("]")
with open("/tmp/i25_data.csv", "w") as f:
    n = 0
    i = 0
    f.write("id,name,city,score,note\n")
    while n < 100_000_000:
        line = f'{i},name {i},"City, {i % 100}",{random.random() * 100:.3f},"said ""hi"" {i}"\n'
        f.write(line)
        n += len(line)
        i += 1
