# Alternate smoke runs of the code before (OLD: a checkout of e4e890c) and after the deferred
# row (NEW: this checkout), 3 each; then the iteration period (time_s differences) and the row
# bookkeeping of each run. Usage: OLD=<checkout of e4e890c> NEW=<checkout> bash <this file>
set -u
for i in 1 2 3; do
  for v in old new; do
    d=/tmp/rowab/$v$i; rm -rf "$d"
    if [ $v = old ]; then cd "$OLD"; else cd "$NEW"; fi
    timeout 900 python -m flashsac_bench +experiment=smoke run.iterations=400 \
      backend.mode=threads hydra.run.dir=$d run.progress=plain > /dev/null 2>&1
  done
done
cd "$NEW" && python - <<'PY'
import json, statistics as st
for v in ("old", "new"):
    for i in (1, 2, 3):
        rows = json.load(open(f"/tmp/rowab/{v}{i}/summary.json"))["rows_all"][50:]
        t = [r["time_s"] for r in rows]
        period = [(b - a) * 1e3 for a, b in zip(t, t[1:])]
        book = [r["bookkeeping_ms"] for r in rows]
        coll = [r["collector_cycle_ms"] for r in rows]
        learn = [r["learner_train_ms"] for r in rows if r["learner_train_ms"]]
        print(f"{v} {i}: period median {st.median(period):.3f} mean {st.mean(period):.3f} ms | "
              f"bookkeeping median {st.median(book):.3f} | collector {st.median(coll):.3f} | "
              f"learner {st.median(learn):.3f}")
PY
