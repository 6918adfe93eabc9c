#!/bin/bash
# The live refresh of a large CSV file (bench/notes/formats.md, "The live refresh of a large
# file"): a `dirq server` over one CSV table of the first <MB> megabytes of the formats
# benchmark's 200 MB file; one line is appended (the file written aside and renamed), and the
# time to its `insert` event at an /events client and the server's peak RSS are printed.
#   bash bench/dirq-large-refresh.sh <MB> [ddl]
# With `ddl`, the table has a ddl (an index), which keeps the row-by-row refresh. Make the
# source file first: node bench/dirq-formats.mjs --only csv --runs 1
set -euo pipefail
mb=${1:?usage: bash bench/dirq-large-refresh.sh <MB> [ddl]}
source=${DIRQ_BENCH_CSV:-/tmp/dirq-formats-bench/csv-200000000/big.csv}
bin=${DIRQ_BIN:-$(cd "$(dirname "$0")/.." && pwd)/packages/dirq/bin/dirq.cjs}
[ -f "$source" ] || { echo "no $source: run node bench/dirq-formats.mjs --only csv --runs 1" >&2; exit 2; }
dir=$(mktemp -d /tmp/dirq-large-refresh.XXXXXX)
cd "$dir"
head -c $((mb * 1000000)) "$source" | head -n -1 > big.csv
printf '[[table]]\nname = "big"\nglob = "big.csv"\nformat = "csv"\n' > cfg.toml
[ "${2:-}" = ddl ] && echo 'ddl = "CREATE INDEX big_city ON big(city)"' >> cfg.toml
node "$bin" server -c cfg.toml --port 0 > server.out 2> server.err &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 600); do
  grep -q Running server.out && break
  kill -0 $server 2>/dev/null || { echo "dirq server exited:" >&2; cat server.err >&2; exit 1; }
  sleep 0.2
done
port=$(grep -o ':[0-9]*$' server.out | head -1 | tr -d :)
curl -sN "localhost:$port/events" > events.txt &
sleep 1
cp big.csv .big.tmp
echo '999999999,Zed,Oslo,x,1.5,1,"n"' >> .big.tmp
peak=0
start=$(date +%s%N)
mv .big.tmp big.csv
until grep -q '"action":"insert"' events.txt; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$server/status)
  [ "${rss:-0}" -gt "$peak" ] && peak=$rss
  sleep 0.05
done
end=$(date +%s%N)
echo "$mb MB${2:+ ($2)}: append -> insert event $(((end - start) / 1000000)) ms, server peak RSS $((peak / 1024)) MB; load $(cut -d' ' -f1-3 /proc/loadavg)"
