#!/usr/bin/env python3
"""Shared checker: python3 check_store.py eletronicos.json [beleza.json ...]"""
import json, re, sys, unicodedata, collections

SLUG = re.compile(r'^[a-z0-9]+(-[a-z0-9]+)*$')
SLICES = {"concept-words", "taught", "never-taught", "off-topic", "wordshare"}
TYPES = {"fact", "policy", "objection"}

def norm(s):
    s = unicodedata.normalize("NFKD", s.lower())
    return "".join(c for c in s if not unicodedata.combining(c))

def toks(s):
    return set(re.findall(r"[a-z0-9]+", norm(s)))

def check(path):
    errs, warns = [], []
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    for k in ("store", "kind", "language", "concepts", "traffic", "tests", "taught_words"):
        if k not in d: errs.append(f"missing top-level field {k}")
    concepts = {c["name"]: c for c in d["concepts"]}
    if len(concepts) != len(d["concepts"]): errs.append("duplicate concept names")
    for c in d["concepts"]:
        n = c["name"]
        if not SLUG.match(n) or len(n) > 64: errs.append(f"bad slug {n}")
        if c.get("type") not in TYPES: errs.append(f"bad type {n}: {c.get('type')}")
        if not c.get("description") or not c.get("body"): errs.append(f"empty description/body {n}")
        nsent = len(re.findall(r"[.!?](\s|$)", c["body"]))
        if not (2 <= nsent <= 7): warns.append(f"body of {n} has {nsent} sentences")
        for link in re.findall(r"\[\[([^\]]+)\]\]", c["body"]):
            if link not in concepts: errs.append(f"{n}: link to unknown concept {link}")
    # traffic
    sids = set()
    cust_turns = []
    about_count = collections.Counter()
    for s in d["traffic"]:
        if s["session"] in sids: errs.append(f"dup session {s['session']}")
        sids.add(s["session"])
        for a in s["about"]:
            if a not in concepts: errs.append(f"{s['session']}: unknown about {a}")
            about_count[a] += 1
        nt = len(s["turns"])
        if not (1 <= nt <= 4): errs.append(f"{s['session']}: {nt} turns")
        for t in s["turns"]:
            if not t.get("customer") or not t.get("assistant"): errs.append(f"{s['session']}: empty turn")
            cust_turns.append(t["customer"])
    if len(d["traffic"]) < 110: errs.append(f"only {len(d['traffic'])} sessions")
    for n in concepts:
        if about_count[n] == 0: warns.append(f"concept {n} has no traffic")
    # taught words
    tw = d["taught_words"]
    for cname, exprs in tw.items():
        if cname not in concepts: errs.append(f"taught_words: unknown concept {cname}"); continue
        c = concepts[cname]
        ctext = norm(" ".join([c["name"], c["description"], c["body"]]))
        ctext_raw = " ".join([c["name"], c["description"], c["body"]]).lower()
        for e in exprs:
            el = e.lower()
            if el in ctext_raw or norm(e) in ctext:
                errs.append(f"taught '{e}' occurs in concept {cname}")
            n = 0
            for s in d["traffic"]:
                if cname in s["about"]:
                    txt = " ".join(t["customer"] for t in s["turns"]).lower()
                    if el in txt: n += 1
            if n < 3: errs.append(f"taught '{e}' ({cname}) only in {n} sessions")
    if len(tw) < 8: warns.append(f"only {len(tw)} concepts with taught words")
    # tests
    ids = set()
    slices = collections.Counter()
    lens = collections.Counter()
    langs = collections.Counter()
    cust_norm = {norm(x).strip() for x in cust_turns}
    cust_toks = [toks(x) for x in cust_turns]
    for t in d["tests"]:
        tid = t["id"]
        if tid in ids: errs.append(f"dup test id {tid}")
        ids.add(tid)
        sl = t["slice"]
        if sl not in SLICES: errs.append(f"{tid}: bad slice {sl}")
        slices[sl] += 1
        langs[t["language"]] += 1
        m = t["message"]
        L = len(m)
        lens["long(200-700)" if 200 <= L <= 700 else ("short(<200)" if L < 200 else "over700")] += 1
        for e in t["expected"]:
            if e not in concepts: errs.append(f"{tid}: unknown expected {e}")
        if sl in ("off-topic", "wordshare") and t["expected"]:
            errs.append(f"{tid}: {sl} must expect []")
        if sl not in ("off-topic", "wordshare") and not t["expected"]:
            errs.append(f"{tid}: {sl} must expect something")
        if norm(m).strip() in cust_norm: errs.append(f"{tid}: copied from traffic")
        mt = toks(m)
        for ct in cust_toks:
            if len(mt) >= 4 and ct and len(mt & ct) / len(mt | ct) > 0.7:
                errs.append(f"{tid}: near-copy of a traffic turn"); break
        ml = m.lower()
        exp_exprs = [e.lower() for c in t["expected"] for e in tw.get(c, [])]
        for c2, es in tw.items():
            if c2 not in t["expected"]:
                for e in es:
                    if e.lower() in ml and sl != "wordshare":
                        warns.append(f"{tid}: contains taught '{e}' of non-expected concept {c2}")
        if sl == "taught":
            if not any(e in ml for e in exp_exprs):
                errs.append(f"{tid}: taught test uses no taught expression of its concepts")
        if sl == "never-taught":
            if any(e in ml for e in exp_exprs):
                errs.append(f"{tid}: never-taught test uses a taught expression")
        if sl == "wordshare":
            allw = set()
            for es in tw.values():
                for e in es: allw |= {w for w in toks(e) if len(w) >= 4}
            for c in concepts.values():
                allw |= {w for w in toks(c["body"] + " " + c["name"]) if len(w) >= 4}
            if not (mt & allw): warns.append(f"{tid}: wordshare shares no word")
        if sl == "concept-words":
            c_words = set()
            for c in t["expected"]:
                cc = concepts[c]
                c_words |= {w for w in toks(cc["body"] + " " + cc["name"] + " " + cc["description"]) if len(w) >= 4}
            if len(mt & c_words) < 2: warns.append(f"{tid}: concept-words shares <2 words with concept")
    n = len(d["tests"])
    if n < 75: errs.append(f"only {n} tests")
    if langs["en"] < 6: errs.append(f"only {langs['en']} en tests")
    print(f"== {path}: store={d['store']} concepts={len(concepts)} sessions={len(d['traffic'])} "
          f"(off-topic sessions={sum(1 for s in d['traffic'] if not s['about'])}) tests={n}")
    print("   slices:", {k: f"{slices[k]} ({100*slices[k]/n:.0f}%)" for k in sorted(SLICES)})
    print("   lengths:", dict(lens), " langs:", dict(langs))
    print("   taught concepts:", len(tw), " expressions:", sum(len(v) for v in tw.values()))
    for w in warns: print("   WARN", w)
    for e in errs: print("   ERROR", e)
    return not errs

if __name__ == "__main__":
    ok = all([check(p) for p in sys.argv[1:]])
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)
