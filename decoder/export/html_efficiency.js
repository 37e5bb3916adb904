    /* GPU efficiency (decoder/export/html_efficiency.c writes the data;
     * this text is part of html_page.html's script, where "@EFFJS@" is):
     * activity lines under each drawn rank's timeline rows, and the job's
     * kernel-family table. An absent figure is drawn as absent with its
     * reason, never as 0. */
    const ACT = [["sm", "SM active", "%", "#1f77b4"], ["tensor", "tensor active", "%", "#9467bd"],
      ["dram", "DRAM bandwidth", "%", "#d62728"], ["nvlink", "NVLink tx+rx", " GB/s", "#2ca02c"]];
    const ACT_H = 26;
    /* a rank's activity rows: one per metric, or one saying why there are none */
    function actRows(r) {
      const E = r.eff;
      if (!E) return [];
      if (E.why) return [{ act: true, rank: r.rank, metric: "all", label: "GPU activity (GPM)", why: E.why, iv: [], hgt0: 18, ws: r.ws, we: r.we }];
      return ACT.map(function (a, j) {
        let max = a[2] === "%" ? 100 : 0;
        if (!max) for (let i = 2 + j; i < E.iv.length; i += 6) if (E.iv[i] !== null) max = Math.max(max, E.iv[i]);
        const top = max > 0 ? max : 1;
        return { act: true, rank: r.rank, metric: a[0], label: a[1] + " (0–" + (a[2] === "%" ? "100%" : (top < 10 ? top.toFixed(2) : top.toFixed(0)) + " GB/s") + ")", unit: a[2], colour: a[3], col: 2 + j,
          why: E.missing[a[0]] || (E.iv.length ? null : "no GPM sample interval in the rank's window"), iv: E.iv, max: top, hgt0: ACT_H, ws: r.ws, we: r.we };
      });
    }
    /* a step line: each interval's value held over it; a gap where a value is absent */
    function drawAct(row, k, plot) {
      ctx.fillStyle = "#57606a"; ctx.fillText(row.label, 12, row.y + row.hgt / 2);
      ctx.fillStyle = "#fbfcfd"; ctx.fillRect(LABEL, row.y + 2, plot, row.hgt - 4);
      row.drawn = { segs: 0, sum: 0, w: 0 };
      if (row.why) {
        ctx.fillStyle = "#8c959f"; ctx.fillText("– " + row.why, LABEL + 6, row.y + row.hgt / 2);
        return;
      }
      const full = row.hgt - 6, x = row.iv, c = row.col;
      ctx.strokeStyle = row.colour; ctx.lineWidth = 1.5; used["act_" + row.metric] = row.colour;
      ctx.beginPath();
      let open = false;
      for (let i = 0; i < x.length; i += 6) {
        const s0 = x[i], e0 = x[i + 1], v = x[i + c];
        if (e0 <= v0 || s0 >= v1 || v === null) { open = false; continue; }
        const a = Math.max(s0, v0), b = Math.min(e0, v1), y = row.y + 3 + full - Math.min(1, v / row.max) * full;
        const xa = LABEL + (a - v0) * k, xb = LABEL + (b - v0) * k;
        if (open) ctx.lineTo(xa, y); else ctx.moveTo(xa, y);
        ctx.lineTo(xb, y); open = true;
        row.drawn.segs++;
        const wa = Math.max(a, row.ws), wb = Math.min(b, row.we);
        if (wb > wa) { row.drawn.sum += v * (wb - wa); row.drawn.w += wb - wa; }
      }
      ctx.stroke(); ctx.lineWidth = 1;
    }
    /* what the activity rows drew: the line's time-weighted mean over the
     * rank's window (the whole-run view), or the reason it is absent */
    function actRecord(r) {
      return { rank: r.rank, metric: r.metric, absent: r.why, n: r.iv.length / 6, segs: r.drawn ? r.drawn.segs : 0,
        mean: r.drawn && r.drawn.w > 0 ? r.drawn.sum / r.drawn.w : null };
    }
    function actTip(e, row, t) {
      if (row.why) { showTip(e, row.label + " (rank " + row.rank + "): absent — " + row.why); return; }
      for (let i = 0; i < row.iv.length; i += 6)
        if (row.iv[i] <= t && t < row.iv[i + 1]) {
          const v = row.iv[i + row.col];
          showTip(e, row.label + " (rank " + row.rank + "): " + (v === null ? "absent in this interval" : v.toFixed(row.unit === "%" ? 1 : 2) + row.unit) +
            " over " + fmtT(row.iv[i]) + " – " + fmtT(row.iv[i + 1]) + " (the device's mean over the GPM interval)");
          return;
        }
      tip.style.display = "none";
    }
    function actLegend(lg) {
      for (const a of ACT) if (used["act_" + a[0]]) swatch(lg, "act_" + a[0], a[3], "activity: " + a[1]);
    }
    /* the job's kernel families: busy time, SM, tensor and DRAM activity
     * while they run, class and mixed share (docs/efficiency.md) */
    function effTable() {
      const F = D.eff_fam, t = document.getElementById("efffam"), note = document.getElementById("effnote");
      const head = ["kernel family", "busy", "SM %", "tensor %", "DRAM %", "class", "mixed %"];
      const tr = h("tr"); for (const c of head) tr.appendChild(h("th", {}, c)); t.appendChild(tr);
      drawn.eff = { why: F.why, rows: [] };
      if (F.why) {
        note.textContent = "Unavailable: " + F.why + ".";
        const r = h("tr"); r.appendChild(h("td", { colspan: head.length, "data-why": F.why }, "– " + F.why)); t.appendChild(r);
        return;
      }
      note.textContent = "From NVML GPM samples (CUTRACE_GPM_MS), each family's figures while its kernels run, over every rank; mixed: the share from sample intervals it shared with other families (its figure is then a blend). A dash is a figure the samples do not give; hover it for why." +
        (F.total > F.rows.length ? " The " + F.rows.length + " families with the most sampled time of " + F.total + "; cutrace report --json has them all." : "");
      for (const f of F.rows) {
        const r = h("tr", { "data-fam": f[0] }), rec = { name: f[0], busy: f[1], attributed: f[2], mixed: f[3], sm: f[4], tensor: f[5], dram: f[6], cls: f[7] };
        const unseen = "no GPM sample interval saw this family's kernels";
        const why = f[2] > 0 ? "not given by the device (NVML answered \"not supported\")" : unseen;
        r.appendChild(h("td", { class: "name", title: f[0] }, f[0]));
        r.appendChild(h("td", {}, fmtT(f[1])));
        for (const [k, v] of [["sm", f[4]], ["tensor", f[5]], ["dram", f[6]]])
          r.appendChild(v === null ? h("td", { "data-k": k, "data-why": why, title: why }, "–") : h("td", { "data-k": k }, v.toFixed(1)));
        r.appendChild(h("td", { "data-k": "class", title: f[7] === "blend" ? "more than half its time in shared intervals: not judged" : "" }, f[7].replace(/_/g, " ")));
        r.appendChild(f[3] === null ? h("td", { "data-k": "mixed", "data-why": unseen, title: unseen }, "–") : h("td", { "data-k": "mixed" }, f[3].toFixed(1)));
        t.appendChild(r);
        drawn.eff.rows.push(rec);
      }
    }
