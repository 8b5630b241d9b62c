#!/usr/bin/env bash
# Self-test of the interop drivers (no Rust involved): runs tests/interop/ts/client.mjs and
# tests/interop/py/client.py against server-everything (streamableHttp, 127.0.0.1, free port)
# and against tests/interop/py/fake_server.py in a few server/discover modes.
#   scripts/peers >/dev/null && tests/interop/selftest.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
[ -f "$REPO/.peers/env.sh" ] || { echo "selftest: run scripts/peers first" >&2; exit 1; }
# shellcheck disable=SC1091
. "$REPO/.peers/env.sh"
TMP="$(mktemp -d)"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

pass=0 fail=0
check() { # check <name> <python expression over o (output) and w (wire messages)>
    local name="$1" expr="$2"
    if python3 - "$TMP/out.json" "$TMP/wire.jsonl" "$expr" <<'EOF'; then
import json, sys
o = json.load(open(sys.argv[1]))
w = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
ok = eval(sys.argv[3])
if not ok:
    print(json.dumps(o)[:2000], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
        pass=$((pass + 1)); echo "ok   $name"
    else
        fail=$((fail + 1)); echo "FAIL $name"
    fi
}
wait_port() { # wait_port <file> <regex with the port as last number>
    local i
    for i in $(seq 1 100); do
        if grep -qE "$2" "$1" 2>/dev/null; then grep -oE "$2" "$1" | head -1 | grep -oE '[0-9]+$'; return 0; fi
        sleep 0.1
    done
    echo "selftest: server did not start: $(cat "$1")" >&2; return 1
}
run_ts() { MANIFOLD_WIRE_LOG="$TMP/wire.jsonl" "$MANIFOLD_NODE" "$REPO/tests/interop/ts/client.mjs" "$@" >"$TMP/out.json" 2>"$TMP/err.log" || true; }
run_py() { MANIFOLD_WIRE_LOG="$TMP/wire.jsonl" "$MANIFOLD_PYTHON" "$REPO/tests/interop/py/client.py" "$@" >"$TMP/out.json" 2>"$TMP/err.log" || true; }

# --- server-everything over Streamable HTTP --------------------------------------------
PORT=0 "$MANIFOLD_NODE" --import "$REPO/tests/interop/ts/bind-localhost.mjs" \
    "$MANIFOLD_NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp \
    >/dev/null 2>"$TMP/everything.log" &
PIDS+=($!)
port="$(wait_port "$TMP/everything.log" 'listening on 127\.0\.0\.1:[0-9]+')"
url="http://127.0.0.1:$port/mcp"
plan='{"steps":[{"op":"list_tools"},{"op":"call_tool","name":"echo","arguments":{"message":"hi"}},
 {"op":"call_tool_with_progress","name":"trigger-long-running-operation","arguments":{"duration":1,"steps":2}},
 {"op":"ping"}]}'
for drv in ts py; do
    "run_$drv" "$url" "$plan"
    check "$drv everything: handshake 2025-11-25" 'o["protocolVersion"] == "2025-11-25" and o["serverInfo"]["name"] == "mcp-servers/everything"'
    check "$drv everything: tools listed" '"trigger-long-running-operation" in [t["name"] for t in o["results"][0]]'
    check "$drv everything: echo" 'o["results"][1]["content"][0]["text"] == "Echo: hi"'
    check "$drv everything: progress" '[p["progress"] for p in o["results"][2]["progress"]] == [1, 2] and "content" in o["results"][2]["result"]'
    check "$drv everything: ping, no errors" 'o["results"][3] == {} and o["errors"] == []'
    check "$drv everything: wire log" 'sum(1 for m in w if m.get("method") == "notifications/progress") == 2 and all(m.get("jsonrpc") == "2.0" for m in w)'
done

# prompts, resources, completion, subscriptions, logging (the same server, straight)
doc='demo://resource/static/document/features.md'
plan='{"steps":[{"op":"set_logging_level","level":"debug"},{"op":"list_prompts"},
 {"op":"get_prompt","name":"args-prompt","arguments":{"city":"Austin"}},{"op":"list_resources"},
 {"op":"list_resource_templates"},{"op":"read_resource","uri":"demo://resource/dynamic/text/5"},
 {"op":"complete","ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"S"}},
 {"op":"subscribe_resource","uri":"'"$doc"'"},{"op":"call_tool","name":"toggle-subscriber-updates"},
 {"op":"wait_notifications","method":"notifications/resources/updated","since":7},
 {"op":"call_tool","name":"toggle-subscriber-updates"},
 {"op":"wait_notifications","method":"notifications/message","since":7},
 {"op":"unsubscribe_resource","uri":"'"$doc"'"},{"op":"read_resource","uri":"demo://nope"}]}'
for drv in ts py; do
    "run_$drv" "$url" "$plan"
    check "$drv everything: prompts" '"simple-prompt" in [p["name"] for p in o["results"][1]] and o["results"][2]["messages"][0]["content"]["text"] == "What'"'"'s weather in Austin?"'
    check "$drv everything: resources" '"'"$doc"'" in [r["uri"] for r in o["results"][3]] and len(o["results"][4]) == 2 and o["results"][5]["contents"][0]["text"].startswith("Resource 5: ")'
    check "$drv everything: completion" 'o["results"][6]["completion"]["values"] == ["Sales", "Support"]'
    check "$drv everything: subscription" 'o["results"][7] == {} and o["results"][9] == [{"uri": "'"$doc"'"}] and o["results"][12] == {}'
    check "$drv everything: logging" 'o["results"][0] == {} and any("Received Subscribe" in m["data"] for m in o["results"][11])'
    check "$drv everything: only the unknown URI failed" '[e["step"] for e in o["errors"]] == [13] and o["results"][13]["error"]["code"] is not None'
done

# --- fake server: errors, pagination, discover fallback ---------------------------------
plan='{"steps":[{"op":"list_tools"},{"op":"call_tool","name":"fail"},{"op":"call_tool","name":"fail400"},
 {"op":"call_tool_with_progress","name":"slow"},{"op":"ping"}],"timeoutMs":15000}'
for mode in 404 200err 400json 32022old legacyok; do
    python3 "$REPO/tests/interop/py/fake_server.py" "$mode" >"$TMP/fake.log" 2>&1 &
    fpid=$!
    PIDS+=($fpid)
    port="$(wait_port "$TMP/fake.log" 'listening on 127\.0\.0\.1:[0-9]+')"
    for drv in ts py; do
        [ "$drv" = ts ] && [ "$mode" != 404 ] && continue # the TS SDK never probes server/discover
        "run_$drv" "http://127.0.0.1:$port/mcp" "$plan"
        check "$drv fake/$mode: initialize fallback" 'o["negotiation"] == "initialize" and o["protocolVersion"] == "2025-11-25"'
        check "$drv fake/$mode: 2 pages of tools" '[t["name"] for t in o["results"][0]] == ["echo", "fail", "fail400", "slow"]'
        check "$drv fake/$mode: error codes" 'o["results"][1]["error"]["code"] == -32602 and o["results"][2]["error"]["code"] == -32602'
        check "$drv fake/$mode: progress via SSE" 'len(o["results"][3]["progress"]) == 2 and o["results"][4] == {}'
    done
    kill "$fpid"
done

python3 "$REPO/tests/interop/py/fake_server.py" 32022new >"$TMP/fake.log" 2>&1 &
fpid=$!
PIDS+=($fpid)
port="$(wait_port "$TMP/fake.log" 'listening on 127\.0\.0\.1:[0-9]+')"
run_py "http://127.0.0.1:$port/mcp" '{"steps":[]}'
check "py fake/32022new: connect fails with -32022" 'o["errors"][0]["op"] == "connect" and o["errors"][0]["code"] == -32022'
kill "$fpid"

echo "selftest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
