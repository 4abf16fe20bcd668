#!/usr/bin/env bash
# Issue 14's thin-push figure on a realistic store: how much of a snapshot a push uploads when
# the registry already holds the snapshot before it, and 1% of the sessions got one more turn.
#
#   scripts/thin-push.sh [STORE]    (STORE: a Claude Code home; default: the bench's 64M store)
#
# 1. Starts its own registry: Debian's docker-registry (CNCF distribution 2.8, as the tests
#    use; `apt-get install -y docker-registry`), on 127.0.0.1, no auth, storage in a temp dir.
# 2. Copies STORE into a scratch HOME; `asp backup`; `asp push latest REG/bench/state:one`.
# 3. Appends one turn (a user prompt, an assistant answer, the turn's duration and the last
#    prompt, cloned from the session's own last lines with new ids and later times) to 1% of
#    the sessions (at least one), chosen evenly by path.
# 4. `asp backup`; `asp push latest REG/bench/state:two`; prints uploaded / total bytes, and
#    which layers of the second content manifest the first lacked (what was uploaded).
#
# The default store is made by the bench generator (cli/benches/stores), as `cargo bench -p
# asp-cli --bench stores -- --sizes 64M --generate-only` makes it; it is built here in the dev
# profile when missing. Uses target/debug/asp (built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
store=${1:-$root/target/tmp/stores/claude-64M}
if [ ! -d "$store/.claude" ]; then
  cargo bench -p asp-cli --bench stores --profile dev -- --sizes 64M --generate-only
fi
[ -x target/debug/asp ] || cargo build -p asp-cli --bin asp
asp=$root/target/debug/asp
registry=${ASP_TEST_REGISTRY_BIN:-$(command -v docker-registry || echo /usr/bin/docker-registry)}
[ -x "$registry" ] || { echo "needs docker-registry (apt-get install -y docker-registry)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/asp-thin-push.XXXXXX")
reg_pid=
cleanup() {
  [ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null && wait "$reg_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/storage"
cat >"$work/config.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/storage
http:
  addr: 127.0.0.1:$port
  secret: asp-thin-push
EOF
"$registry" serve "$work/config.yml" >"$work/registry.log" 2>&1 &
reg_pid=$!
for _ in $(seq 200); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done

home=$work/home
mkdir -p "$home"
cp -a "$store/.claude" "$home/"
export HOME=$work/user ASP_REPO=$work/repo XDG_STATE_HOME=$work/state DOCKER_CONFIG=$work/docker
mkdir -p "$HOME" "$DOCKER_CONFIG"
ref=127.0.0.1:$port/bench/state

"$asp" backup -q --from claude-code --home "$home"
"$asp" push -q --json latest "$ref:one" >"$work/one.json"

python3 - "$home" <<'EOF'
import json, os, sys, uuid, datetime
home = sys.argv[1]
projects = os.path.join(home, ".claude", "projects")
sessions = sorted(
    os.path.join(projects, b, f)
    for b in os.listdir(projects)
    for f in os.listdir(os.path.join(projects, b))
    if f.endswith(".jsonl")
)
n = max(1, round(len(sessions) / 100))
step = len(sessions) / n
chosen = [sessions[int(i * step)] for i in range(n)]

def later(ts, s):
    t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ") + datetime.timedelta(seconds=s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"

for path in chosen:
    lines = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    def last(pred):
        return next(l for l in reversed(lines) if pred(l))
    user = last(lambda l: l.get("type") == "user" and isinstance(l.get("message", {}).get("content"), str))
    answer = last(lambda l: l.get("type") == "assistant")
    duration = last(lambda l: l.get("type") == "system" and l.get("subtype") == "turn_duration")
    tip = last(lambda l: "uuid" in l)
    ts = tip["timestamp"]
    prompt = "one more turn: run the tests again and say what changed"
    u = dict(user, uuid=str(uuid.uuid4()), parentUuid=tip["uuid"], timestamp=later(ts, 30),
             message=dict(user["message"], content=prompt))
    a = dict(answer, uuid=str(uuid.uuid4()), parentUuid=u["uuid"], timestamp=later(ts, 41))
    a["message"] = dict(answer["message"], id="msg_" + uuid.uuid4().hex[:24],
                        content=[{"type": "text", "text": "The tests pass again; nothing else changed."}])
    if "requestId" in a:
        a["requestId"] = "req_" + uuid.uuid4().hex[:24]
    d = dict(duration, uuid=str(uuid.uuid4()), parentUuid=a["uuid"], timestamp=later(ts, 42))
    lp = {"type": "last-prompt", "lastPrompt": prompt, "leafUuid": d["uuid"], "sessionId": tip["sessionId"]}
    with open(path, "a", encoding="utf-8") as f:
        for l in (u, a, d, lp):
            f.write(json.dumps(l, separators=(",", ":"), ensure_ascii=False) + "\n")
print(f"appended a turn to {n} of {len(sessions)} sessions: " + ", ".join(os.path.basename(p) for p in chosen))
EOF

"$asp" backup -q --from claude-code --home "$home"
"$asp" push -q --json latest "$ref:two" >"$work/two.json"

python3 - "$work" "$ASP_REPO" <<'EOF'
import json, os, sys
work, repo = sys.argv[1:]
one, two = (json.load(open(os.path.join(work, f))) for f in ("one.json", "two.json"))
def blob(d):
    return open(os.path.join(repo, "blobs", "sha256", d.split(":")[1]), "rb").read()
def content(d):
    return json.loads(blob(d))
m1, m2 = content(one["digest"]), content(two["digest"])
had = {l["digest"] for l in m1["layers"]}
total = two["bytesUploaded"] + two["bytesSkipped"]
print(f"first push:  {one['blobsUploaded']} blobs, {one['bytesUploaded']:,} bytes uploaded "
      f"(+ {one['manifestBytes']:,} manifest bytes)")
print(f"second push: {two['blobsUploaded']} of {two['blobs']} blobs, {two['bytesUploaded']:,} of "
      f"{total:,} blob bytes uploaded ({100 * two['bytesUploaded'] / total:.2f} %), "
      f"+ {two['manifestBytes']:,} manifest bytes "
      f"({100 * (two['bytesUploaded'] + two['manifestBytes']) / (total + two['manifestBytes']):.2f} % in all)")
names = {0: "state manifest", 1: "layer table"}
for i, l in enumerate(m2["layers"]):
    if l["digest"] not in had:
        print(f"  new layer {names.get(i, 'body')}: {l['size']:,} bytes ({l['mediaType']})")
EOF
