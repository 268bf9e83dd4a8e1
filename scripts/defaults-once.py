#!/usr/bin/env python3
"""Issue 13, item 1: a setting's default appears as a literal, comments included,
in exactly one non-test file. For each entry of appliance/settings.go this finds
the lines of non-test .go files (and the hand-written docs/*.md) that write its
default value (in Go, in flag text, in Kafka's unit) next to a name of the setting
(flag, Kafka name, Config field, default constant), and lists the files. Generated
files (cmd/skiff/man page, packaging/files/skiff.yaml) come from the table and are
skipped, and so is internal/testnode, a harness only tests import. Usage: scripts/defaults-once.py [--docs] (from the repository root)."""
import os, re, subprocess, sys

docs = "--docs" in sys.argv
src = open("appliance/settings.go").read()
body = src[src.index("return []Setting{"):src.index("// defaultFlushInterval")]
entries = re.split(r"\n\t\t\{Name: ", body)[1:]
helptext = subprocess.run(["go", "run", "./cmd/skiff", "serve", "--help"], capture_output=True, text=True).stdout
defaults = {}
for l in helptext.splitlines():
    m = re.match(r"\s+--([a-z0-9-]+)", l)
    d = re.search(r"\(default: ([^)]*)\)\s*$", l)
    if m and d:
        defaults[m.group(1)] = d.group(1)

UNITS = {"ms": ("Millisecond", 1), "s": ("Second", 1000), "m": ("Minute", 60000), "h": ("Hour", 3600000)}

def forms(text):
    """Regexes of the ways a default is written."""
    out = []
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", text)
    if m:
        n, u = int(m.group(1)), m.group(2)
        if n == 0:
            return []  # no default: 0 means none or no limit
        unit, ms = UNITS[u]
        if n == 1:
            out += [rf"(?<![*\w] )(?<![*\w])time\.{unit}\b"]
        if u == "m":
            out += [rf"\b{n * 60}\s*\*\s*time\.Second\b"]
        out += [rf"\b{n}\s*\*\s*time\.{unit}\b", rf"(?<![\w.]){n}{u}\b", rf"\b{n} ?{unit.lower()}s?\b", rf"\b{n * ms}\b"]
        if u == "h" and n % 24 == 0:
            out += [rf"\b{n // 24}\s*\*\s*24\s*\*\s*time\.Hour", rf"\b{n // 24} days?\b"]
        if u == "m" and n % 60 == 0:
            out += [rf"\b{n // 60}\s*\*\s*time\.Hour", rf"(?<![\w.]){n // 60}h\b"]
        if u == "s" and n % 60 == 0:
            out += [rf"\b{n // 60}\s*\*\s*time\.Minute", rf"(?<![\w.]){n // 60}m\b", rf"\b{n // 60} minutes?\b"]
        return out
    if re.fullmatch(r"\d+", text):
        n = int(text)
        if n < 2:
            return []  # 0 and 1 are everywhere; checked by hand
        out += [rf"(?<![\w.]){n}(?![\w.])", rf"\b{n:,}\b".replace(",", "[, ]")]
        for sh, name in ((20, "MiB"), (30, "GiB")):
            if n % (1 << sh) == 0:
                out += [rf"\b{n >> sh}\s*<<\s*{sh}\b", rf"\b{n >> sh} ?{name}\b"]
        return out
    if text in ("", "false", "true"):
        return []
    return [re.escape('"' + text + '"'), re.escape(text)]

def names(entry, flag):
    ns = {flag}
    k = re.search(r'Kafka: "([^"]+)"', entry)
    if k:
        ns.add(k.group(1))
    for f in re.findall(r"&(?:c|g|tx)\.(\w+)", entry):
        ns.add(f)
    for c in re.findall(r"\b\w+\.(Default\w+)", entry):
        ns.add(c)
    return ns

# Matches read by hand that are not the default written again: the same word
# as a value or syntax the code parses, or the same number for another setting.
NOT_DEFAULT = {
    "tls-principal-mapping-rules": {"appliance/settings.go": "the DEFAULT rule's syntax in the doc line",
                                    "kafkaapi/server.go": "the DEFAULT rule's syntax"},
    "authorizer": {"appliance/settings.go": "the values, in the doc line",
                   "kafkaapi/29_describe_acls.go": "--authorizer none as a value", "kafkaapi/authorize.go": "--authorizer none as a value",
                   "kafkaapi/server.go": "--authorizer none as a value"},
    "http-auth": {"appliance/settings.go": "the values, in the doc line", "appliance/http.go": "the value all"},
    "log-level": {"cmd/skiff/serve.go": "the values parsed"},
    "log-format": {"cmd/skiff/serve.go": "the values parsed"},
    "session-timeout": {"groups/coordinator.go": "group.min.session.timeout.ms, another setting"},
    "transaction-state-log-num-partitions": {"kafkaapi/server.go": "offsets.topic.num.partitions, another setting"},
    "transaction-state-log-replication-factor": {"kafkaapi/server.go": "offsets.topic.replication.factor, another setting"},
}
# Defaults built from constants that are not the setting's value as written:
# the ports (appliance.DefaultKafkaPort "9092", DefaultHTTPPort "9644"), the
# mechanism names (auth.ScramSHA512, ...), the assignor names (groups).
COMPOSED = {"listen", "http", "sasl-mechanisms", "group-consumer-assignors"}

files = []
for root, dirs, fs in os.walk("."):
    dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("testdata", "e2e", "testnode")]
    for f in fs:
        p = os.path.join(root, f)[2:]
        if f.endswith(".go") and not f.endswith("_test.go") and not f.startswith("zz_"):
            files.append(p)
        elif docs and f.endswith(".md") and p.startswith("docs/"):
            files.append(p)
text = {p: open(p, errors="replace").read().splitlines() for p in files}

bad = 0
for e in entries:
    flag = re.match(r'"([^"]+)"', e).group(1)
    d = defaults.get(flag, "")
    fs = forms(d)
    if not fs:
        continue
    ns = names(e, flag)
    where = set()
    for p, lines in text.items():
        for i, l in enumerate(lines):
            if not any(re.search(f, l) for f in fs):
                continue
            near = " ".join(lines[max(0, i - 1):i + 2])
            if any(n in near for n in ns) or p == "appliance/settings.go" and flag in near:
                where.add(f"{p}:{i + 1}")
    where = {w for w in where if w.split(":")[0] not in NOT_DEFAULT.get(flag, {})}
    fl = sorted({w.split(":")[0] for w in where})
    if not fl and flag in COMPOSED:
        print(f"ok  {flag} = {d}: composed from named constants (see COMPOSED)")
        continue
    mark = "ok " if len(fl) == 1 else "DUP" if fl else "?? "
    if len(fl) != 1:
        bad += 1
    print(f"{mark} {flag} = {d}: {', '.join(sorted(where)) or 'not found near a name'}")
sys.exit(1 if bad else 0)
