# A 60-iteration smoke run with the G1 env in 2 worker processes, then the medians of the
# env step and straggler_ms (iterations 10-59). Usage: bash run.sh (from the repo root)
set -u
d=/tmp/straggler_smoke; rm -rf "$d"
timeout 600 python -m flashsac_bench +experiment=smoke run.iterations=60 backend.mode=processes \
  backend.workers=2 hydra.run.dir=$d run.progress=plain > /dev/null 2>&1
python - "$d" <<'PY'
import json, statistics as st, sys
s = json.load(open(f"{sys.argv[1]}/summary.json"))
rows = s["rows_all"][10:]
for key in ("env_step_ms", "straggler_ms"):
    vals = [r[key] for r in rows if r[key] is not None]
    print(f"{key}: median {st.median(vals):.3f} ms, max {max(vals):.3f} ms, n={len(vals)}")
print("torch", s["device"].get("torch"), "|", s["device"].get("cpu") or s["device"].get("name"))
PY
rm -rf "$d"
