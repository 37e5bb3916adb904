#!/usr/bin/env python3
"""Opens a `cutrace report --html` page in headless Chromium, driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: Python's standard
library and the chromium binary, nothing else), and checks what the page
drew against what the page claims and against the decoder's other outputs:

  - it loads without a script error: no exception, no console error, no
    log entry of level error, and the page's own mark <body
    data-selfcheck="ok">;
  - every legend's swatches are the colours of its series: in each SVG
    chart, each element of series S (data-s) is drawn in the colour of the
    legend's swatch for S (data-legend); on the timeline (a canvas), the
    colour each class was drawn in equals its legend swatch; on the heat
    maps, each cell's pixel (read back from the canvas) is one of its
    scale's swatches;
  - the timeline covers the run: each drawn rank's GPU rows span exactly
    the rank's window (its first GPU start to its last GPU end, the
    report's window_us), and the busy time drawn in the whole-run view
    equals each row's busy time (nothing left out);
  - the findings are `cutrace diagnose --json`'s (--diagnose): the page's
    data carry the same document and its list shows the same findings in
    the same order (kind, ranks, summary);
  - with --uniform every heat map is one colour; with --straggler R rank
    R's compute row differs from every other row, which are all alike;
  - --stream-busy S=NS: every drawn rank's stream S has NS busy (the job's
    schedule; RANK:S=NS for one rank); --step-busy the same in the view of
    the slowest step (after a click on its zoom button);
  - --ident ID=TEXT: the header's element #ID contains TEXT; --title TEXT:
    the document's title contains it;
  - --expect-error: the page (one broken on purpose) says at its top that
    it could not draw, and marks itself so; nothing else is checked;
  - with --report, GPU efficiency (docs/efficiency.md): each drawn rank with
    GPM figures has its activity lines (SM, tensor, DRAM, NVLink) under its
    rows, each line's time-weighted mean over the rank's window equal to
    the report's `efficiency.window` figure (a metric the report has null
    is drawn absent, with its reason, never as a line at 0), a rank without
    figures one row saying the report's reason; the kernel-family table
    shows the report's `job.efficiency.families` (name, busy time, SM,
    tensor, DRAM, class, mixed share), a dash with its reason where a
    figure is null; --efficiency: the page must have activity lines.

usage: check_html.py PAGE [--report R.json] [--diagnose D.json] [--uniform]
       [--straggler R] [--stream-busy [RANK:]S=NS]... [--step-busy [RANK:]S=NS]...
       [--binned] [--ident ID=TEXT]... [--title TEXT] [--min-charts N] [--expect-error]
       [--efficiency]
       [--screenshot PNG [--clip Y,H] [--scale F]]
Exit status 0 when every check passed, 1 otherwise, 77 (skip) without
Chromium.
"""
import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")
    return ok


class Browser:
    """Headless Chromium with the DevTools protocol on fds 3 (to it) and 4
    (from it): messages are JSON texts ending in a NUL byte."""

    def __init__(self, binary, width=1300, height=2400):
        self.profile = tempfile.mkdtemp(prefix="ct-chromium-")
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # the child's ends moved above 4, so that its dup2 onto 3 and 4
        # cannot clobber one with the other
        to_r2, from_w2 = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
        os.close(to_r)
        os.close(from_w)

        def child():
            os.dup2(to_r2, 3)
            os.dup2(from_w2, 4)

        self.log = open(os.path.join(self.profile, "stderr.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-extensions", "--disable-sync",
             "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
             "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), preexec_fn=child, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self.log)
        os.close(to_r2)
        os.close(from_w2)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next = 0
        self.events = []
        self.session = None

    def _recv(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=60):
        self.next += 1
        m = {"id": self.next, "method": method, "params": params or {}}
        if session and self.session:
            m["sessionId"] = self.session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            a = self._recv(deadline)
            if a.get("id") == self.next:
                if "error" in a:
                    raise RuntimeError(f"{method}: {a['error']}")
                return a["result"]
            self.events.append(a)

    def open(self, url, timeout=90):
        t = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": t, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")
        self.call("Page.navigate", {"url": url})
        deadline = time.time() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._recv(deadline))

    def eval(self, expr, timeout=60):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self):
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                                    for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


# What the page drew, read in the page: colours normalised to rgb() by the
# browser itself; heat map cells read back from their canvas.
READ = r"""
(function () {
  const norm = (function () { const e = document.createElement("i"); document.body.appendChild(e);
    return function (c) { e.style.color = ""; e.style.color = c; return getComputedStyle(e).color; }; })();
  function colourOf(el) {
    const f = el.getAttribute("fill");
    return norm(f && f !== "none" && f !== "transparent" ? f : el.getAttribute("stroke"));
  }
  const charts = [];
  document.querySelectorAll("svg").forEach(function (svg) {
    const legend = {}, series = {};
    svg.querySelectorAll("[data-legend]").forEach(e => { legend[e.dataset.legend] = colourOf(e); });
    svg.querySelectorAll("[data-s]").forEach(e => { (series[e.dataset.s] = series[e.dataset.s] || {})[colourOf(e)] = 1; });
    const box = svg.closest("div");
    charts.push({ id: svg.id || (box && box.id) || "", legend: legend, series: Object.fromEntries(Object.entries(series).map(([k, v]) => [k, Object.keys(v)])) });
  });
  const tlLegend = {};
  document.querySelectorAll("#legend [data-legend]").forEach(e => { tlLegend[e.dataset.legend] = getComputedStyle(e).backgroundColor; });
  const T = window.ctDrawn.timeline, tlColours = {};
  for (const k in T.colours) tlColours[k] = norm(T.colours[k]);
  const heat = {};
  document.querySelectorAll("canvas[id^=heat-]").forEach(function (cv) {
    const g = cv.getContext("2d"), d = cv.dataset, L = +d.left, top = +d.top, cw = +d.cw, rh = +d.rh;
    const cells = [];
    for (let i = 0; i < +d.rows; i++) {
      const row = [];
      for (let j = 0; j < +d.cols; j++) {
        const x0 = L + Math.floor(j * cw), x1 = Math.max(x0 + 1, L + Math.floor((j + 1) * cw));
        const y0 = top + Math.floor(i * rh), y1 = Math.max(y0 + 1, top + Math.floor((i + 1) * rh));
        const p = g.getImageData(Math.floor((x0 + x1 - 1) / 2), Math.floor((y0 + y1 - 1) / 2), 1, 1).data;
        row.push("rgb(" + p[0] + ", " + p[1] + ", " + p[2] + ")");
      }
      cells.push(row);
    }
    const scale = {};
    document.querySelectorAll("#" + cv.id + "-scale [data-legend]").forEach(e => { scale[e.dataset.legend] = getComputedStyle(e).backgroundColor; });
    heat[cv.id.slice(5)] = { cells: cells, scale: scale, classes: window.ctDrawn.heat[cv.id.slice(5)].classes };
  });
  const diag = [...document.querySelectorAll("#diagnose li[data-kind]")].map(li => ({ kind: li.dataset.kind,
    ranks: li.dataset.ranks === "" ? [] : li.dataset.ranks.split(",").map(Number), summary: li.querySelector(".summary").textContent }));
  const ident = {};
  document.querySelectorAll("#ident dd").forEach(e => { ident[e.id] = e.textContent; });
  const effRows = [...document.querySelectorAll("#efffam tr")].slice(1).map(tr => [...tr.children].map(td =>
    ({ text: td.textContent, k: td.dataset.k || null, why: td.dataset.why || null })));
  return JSON.stringify({ selfcheck: document.body.dataset.selfcheck || null, error: document.body.dataset.error || null, effRows: effRows,
    title: document.title, ident: ident, charts: charts, drawnCharts: window.ctDrawn.charts, tlLegend: tlLegend, tlColours: tlColours,
    timeline: T, heat: heat, diagnose: diag, data: JSON.parse(document.getElementById("data").textContent),
    debugVisible: /ok: timeline/.test(document.body.innerText),
    banner: document.getElementById("pageerror").hidden ? null : document.getElementById("pageerror").innerText });
})()
"""


def spec(v):
    """[RANK:]STREAM=NS -> (rank or None, stream, ns)"""
    k, ns = v.split("=")
    rank, _, stream = k.rpartition(":")
    return (int(rank) if rank else None, int(stream), int(ns))


ACT = {"sm": "sm_active_pct", "tensor": "tensor_active_pct", "dram": "dram_bw_pct"}


def check_efficiency(got, report, must):
    """The activity lines and the kernel-family table against the report."""
    act = got["timeline"].get("act", [])
    check("activity lines drawn", act or not must, "none")
    drawn = {r["rank"] for r in got["timeline"]["rows"]}
    for k in report["ranks"]:
        if k["rank"] not in drawn:
            continue
        e = k["efficiency"]
        mine = {a["metric"]: a for a in act if a["rank"] == k["rank"]}
        if e is None:
            continue
        if e["unavailable"]:
            a = mine.get("all")
            check(f"rank {k['rank']}: no activity, said why", a and a["absent"] == e["unavailable"],
                  str(mine))
            continue
        for metric, key in list(ACT.items()) + [("nvlink", None)]:
            a = mine.get(metric)
            if not check(f"rank {k['rank']}: {metric} line", a is not None, str(sorted(mine))):
                continue
            if key:
                want = e["window"][key]
            else:  # tx + rx, MiB/s -> GB/s
                tx, rx = e["window"]["nvlink_tx_mib_s"], e["window"]["nvlink_rx_mib_s"]
                want = None if tx is None or rx is None else (tx + rx) * 1048576 / 1e9
            if want is None:
                why = e["metrics_unavailable"].get(key or "nvlink_tx_mib_s", "")
                check(f"rank {k['rank']}: {metric} absent with its reason, not a line",
                      a["absent"] and a["absent"] == why and a["segs"] == 0, f"{a} vs {why!r}")
                continue
            # the page's values are rounded to 0.01 (%) or 0.001 (GB/s), the
            # report's to 0.01: a time-weighted mean of them is off by at most
            # the sum of both roundings
            tol = 0.011 if key else 0.002 + 0.01 * 1048576 / 1e9 * 2
            check(f"rank {k['rank']}: {metric} line's mean over the window = the report's {want}",
                  a["absent"] is None and a["mean"] is not None and abs(a["mean"] - want) <= tol,
                  str(a))
    fams = report["job"]["efficiency"]["families"][:50]
    rows = got["effRows"]
    if not fams:
        check("family table: none, said why", len(rows) == 1 and rows[0][0]["why"], str(rows))
        return
    check("family table: the report's families, in order", [r[0]["text"] for r in rows] ==
          [f["name"] for f in fams], f"{[r[0]['text'] for r in rows]}")
    for r, f in zip(rows, fams):
        cells = {c["k"]: c for c in r if c["k"]}
        for k, key in ACT.items():
            c = cells.get(k)
            if f[key] is None:
                check(f"family {f['name']} {k}: a dash with its reason", c and c["text"] == "–" and
                      c["why"], str(c))
            else:  # shown to 0.1 from the page's 0.01: within 0.05 + 0.005 + the
                # report's own 0.005 rounding
                check(f"family {f['name']} {k} = {f[key]:.1f}", c and c["text"] != "–" and
                      abs(float(c["text"]) - f[key]) <= 0.06, str(c))
        check(f"family {f['name']} class", cells.get("class", {}).get("text") ==
              f["class"].replace("_", " "), str(cells.get("class")))
        m = cells.get("mixed", {})
        check(f"family {f['name']} mixed share", m.get("text") == "–" if f["mixed_pct"] is None
              else m.get("text") not in (None, "–") and abs(float(m["text"]) - f["mixed_pct"]) <= 0.06,
              str(m))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--report")
    ap.add_argument("--diagnose")
    ap.add_argument("--uniform", action="store_true")
    ap.add_argument("--straggler", type=int)
    ap.add_argument("--stream-busy", action="append", default=[], type=spec)
    ap.add_argument("--step-busy", action="append", default=[], type=spec)
    ap.add_argument("--binned", action="store_true")
    ap.add_argument("--ident", action="append", default=[])
    ap.add_argument("--title")
    ap.add_argument("--min-charts", type=int, default=0)
    ap.add_argument("--expect-error", action="store_true")
    ap.add_argument("--efficiency", action="store_true")
    ap.add_argument("--screenshot")
    ap.add_argument("--clip")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("SKIP: chromium is not installed (scripts/setup installs it)")
        return 77
    b = Browser(binary)
    try:
        b.open("file://" + os.path.abspath(a.page))
        deadline = time.time() + 60
        while not b.eval("document.body.dataset.selfcheck || ''") and time.time() < deadline:
            time.sleep(0.2)
        if a.expect_error:
            got = json.loads(b.eval("JSON.stringify({s: document.body.dataset.selfcheck || null, "
                                    "banner: document.getElementById('pageerror').hidden ? null : "
                                    "document.getElementById('pageerror').innerText})"))
            ok = got["s"] == "error" and (got["banner"] or "").startswith("This page could not draw")
            print(f"{a.page}: {'ok' if ok else 'FAILED'} (broken page: {got})")
            return 0 if ok else 1
        got = json.loads(b.eval(READ))
        # the zoom into the slowest step, then back to the whole run
        b.eval("document.getElementById('zoom-slowest').click(), 1")
        zoomed = json.loads(b.eval("JSON.stringify(window.ctDrawn.timeline)") or "null")
        b.eval("document.getElementById('zoom-all').click(), 1")
        if a.screenshot:
            b.call("Emulation.setDeviceMetricsOverride", {"width": 1300, "height": 2400,
                                                          "deviceScaleFactor": 1, "mobile": False})
            params = {"format": "png", "captureBeyondViewport": True}
            if a.clip:
                y, hgt = (int(x) for x in a.clip.split(","))
                params["clip"] = {"x": 0, "y": y, "width": 1300, "height": hgt, "scale": a.scale}
            png = b.call("Page.captureScreenshot", params)["data"]
            with open(a.screenshot, "wb") as out:
                out.write(base64.b64decode(png))
        errors = b.errors()
    finally:
        b.close()

    # loads without a script error
    check("script errors", not errors, "; ".join(errors))
    check("self-check", got["selfcheck"] == "ok", f"{got['selfcheck']}: {got['error']}")
    check("no debug line", not got["debugVisible"], "the self-check text is shown")
    check("charts drawn", got["drawnCharts"] >= a.min_charts, f"{got['drawnCharts']} < {a.min_charts}")
    D = got["data"]

    # legends are the series' colours
    nseries = 0
    for c in got["charts"]:
        for name, colours in c["series"].items():
            nseries += 1
            check(f"chart {c['id']}: legend for {name}", name in c["legend"], f"legend has {sorted(c['legend'])}")
            if name in c["legend"]:
                check(f"chart {c['id']}: {name}'s colour", colours == [c["legend"][name]],
                      f"series {colours}, legend {c['legend'][name]}")
    check("charts with series", nseries > 0, "no series found")
    for k, colour in got["tlColours"].items():
        check(f"timeline legend for {k}", got["tlLegend"].get(k) == colour,
              f"drawn {colour}, legend {got['tlLegend'].get(k)}")
    check("timeline legend", set(got["tlLegend"]) == set(got["tlColours"]),
          f"legend {sorted(got['tlLegend'])}, drawn {sorted(got['tlColours'])}")
    for key, hm in got["heat"].items():
        swatches = set(hm["scale"].values())
        for i, row in enumerate(hm["cells"]):
            for j, px in enumerate(row):
                if hm["classes"][i][j] is None:
                    continue
                want = hm["scale"][str(hm["classes"][i][j])]
                if not check(f"heat {key} rank row {i} col {j}", px == want and px in swatches,
                             f"pixel {px}, its class's swatch {want}"):
                    break

    # the heat maps' contrast
    if a.uniform:
        for key, hm in got["heat"].items():
            cells = {px for row in hm["cells"] for px in row}
            check(f"uniform job: heat map {key} is one colour", len(cells) == 1, str(sorted(cells)))
    if a.straggler is not None:
        hm = got["heat"]["compute"]
        i = D["heat"]["ranks"].index(a.straggler)
        others = {px for k, row in enumerate(hm["cells"]) if k != i for px in row}
        mine = set(hm["cells"][i])
        check("straggler: the other ranks' compute rows are one colour", len(others) == 1, str(sorted(others)))
        check("straggler: its compute row is distinct", not (mine & others), f"{mine} vs {others}")

    # the timeline covers the run
    T = got["timeline"]
    drawn = {r["rank"] for r in T["rows"]}
    report = json.load(open(a.report)) if a.report else None
    for R in D["ranks"]:
        if not R["detail"]:
            continue
        gpu = [r for r in T["rows"] if r["rank"] == R["rank"] and r["k"] == "gpu"]
        if R["we"] <= R["ws"] and not gpu:  # no GPU interval (GPU timing off)
            continue
        check(f"rank {R['rank']} drawn", R["rank"] in drawn and gpu, "no GPU row")
        if not gpu:
            continue
        lo, hi = min(r["lo"] for r in gpu), max(r["hi"] for r in gpu)
        check(f"rank {R['rank']}: timeline spans its window", (lo, hi) == (R["ws"], R["we"]),
              f"drawn {lo}..{hi}, window {R['ws']}..{R['we']}")
        if report:
            rr = next(x for x in report["ranks"] if x["rank"] == R["rank"])
            check(f"rank {R['rank']}: span = report window_us", abs((hi - lo) / 1e3 - rr["window_us"]) < 1e-3,
                  f"{(hi - lo) / 1e3} vs {rr['window_us']}")
    check("timeline start/end", T["start"] <= min((r["lo"] for r in T["rows"] if r["n"]), default=0)
          and T["end"] >= max((r["hi"] for r in T["rows"] if r["n"]), default=0), str((T["start"], T["end"])))
    for r in T["rows"]:
        # float sums of the per-pixel parts: 1e-9 relative, plus 1 ns
        check(f"rank {r['rank']} {r['label']}: whole-run view draws all its busy time",
              abs(r["view_busy"] - r["busy"]) <= 1e-9 * r["busy"] + 1, f"{r['view_busy']} vs {r['busy']}")
    if a.binned:
        check("aggregated ranks", any(r["mode"] == "bins" for r in T["rows"]), "every row raw")
        check("aggregated ranks keep the slowest step", all(r["zoom_mode"] for r in T["rows"] if r["mode"] == "bins"), "")
    for rank, stream, ns in a.stream_busy:
        rows = [r for r in T["rows"] if r["k"] == "gpu" and r["stream"] == stream and rank in (None, r["rank"])]
        check(f"stream {stream} rows", rows, "none drawn")
        for r in rows:
            check(f"rank {r['rank']} stream {stream} busy", r["busy"] == ns, f"{r['busy']} != {ns}")
    S = D["steps"]["slowest"]
    if zoomed and S:
        check("zoom to the slowest step", zoomed["view"] == [S["start"], S["end"]], str(zoomed["view"]))
        for rank, stream, ns in a.step_busy:
            rows = [r for r in zoomed["rows"] if r["k"] == "gpu" and r["stream"] == stream and rank in (None, r["rank"])]
            check(f"slowest step: stream {stream} rows", rows, "none drawn")
            for r in rows:
                # per-pixel float parts: 1e-9 relative plus 1 ns
                check(f"slowest step: rank {r['rank']} stream {stream} busy", abs(r["view_busy"] - ns) <= 1e-9 * ns + 1,
                      f"{r['view_busy']} != {ns}")
                if r["mode"] == "bins":
                    check(f"slowest step: rank {r['rank']} drawn from its step data", r["view_from_zoom"] > 0, "")

    # diagnose's findings
    if a.diagnose:
        want = json.load(open(a.diagnose))
        check("page data: diagnose --json's document", D["diagnose"] == want, "differs")
        wl = [(f["kind"], f["ranks"], f["summary"]) for f in want["findings"]]
        gl = [(f["kind"], f["ranks"], f["summary"]) for f in got["diagnose"]]
        check("findings list = diagnose --json", gl == wl, f"page {gl}\ndiagnose {wl}")

    if report:
        check_efficiency(got, report, a.efficiency)

    for kv in a.ident:
        k, v = kv.split("=", 1)
        check(f"header {k}", v in got["ident"].get(k, ""), f"{got['ident'].get(k)!r} lacks {v!r}")
    if a.title:
        check("title", a.title in got["title"], got["title"])

    if failures:
        print(f"{a.page}: {len(failures)} check(s) failed:")
        for f in failures[:40]:
            print("  " + f)
        return 1
    nrows = len(T["rows"])
    print(f"{a.page}: ok ({got['drawnCharts']} charts, {nseries} series with legends, {nrows} timeline rows"
          f" ({sum(r['mode'] == 'bins' for r in T['rows'])} binned), heat maps {sorted(got['heat'])},"
          f" {len(got['diagnose'])} findings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
