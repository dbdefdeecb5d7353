# alternate old (723eb68) and new (456129c) smoke runs, 3 each
for i in 1 2 3; do
  for v in old new; do
    d=/tmp/bookab/$v$i; rm -rf $d
    if [ $v = old ]; then cd /tmp/wt723; else cd /work/main; fi
    timeout 900 python -m flashsac_bench +experiment=smoke run.iterations=400 backend.mode=threads hydra.run.dir=$d run.progress=plain > /dev/null 2>&1
  done
done
cd /work/main && python - <<'PY'
import json, statistics as st
for v in ("old","new"):
    for i in (1,2,3):
        r=json.load(open(f"/tmp/bookab/{v}{i}/summary.json"))["rows_all"]
        b=[x["bookkeeping_ms"] for x in r]
        print(v, i, "bookkeeping_ms median %.3f mean %.3f p99 %.2f max %.2f" % (st.median(b), st.mean(b), sorted(b)[int(0.99*len(b))], max(b)))
PY
