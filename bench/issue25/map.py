m = {}
for i in range(5000000):
    m["key" + str(i)] = i
print(len(m), m["key4999999"])
