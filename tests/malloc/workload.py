# tests/malloc/workload.py — a few seconds of Python allocating as programs do: dicts of
# strings, lists grown and sliced, string building and formatting, objects made and
# dropped. Prints figures that depend on every step, compared between allocators.
import hashlib

def run(rounds):
    digest = hashlib.sha256()
    table = {}
    for r in range(rounds):
        words = [("w%d-%d" % (i, r)) * (1 + i % 7) for i in range(3000)]
        for i, w in enumerate(words):
            table[w[:12] + str(i % 977)] = [w, len(w), {"r": r, "i": i}]
        if len(table) > 20000:
            keys = sorted(table)[::3]
            for k in keys:
                del table[k]
        text = "".join(w[:5] for w in words[::5])
        parts = text.split("w")
        digest.update(("%d:%d:%d" % (len(table), len(text), len(parts))).encode())
        nested = [[j * r for j in range(i % 50)] for i in range(400)]
        digest.update(str(sum(map(len, nested))).encode())
    return len(table), digest.hexdigest()

if __name__ == "__main__":
    print(*run(450))
