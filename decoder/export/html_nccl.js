    /* NCCL's account (decoder/export/html_nccl.c writes D.nccl: the report's
     * JSON "nccl" section as is, docs/nccl.md; this text is part of
     * html_page.html's script, where "@NCCLJS@" is): per communicator a
     * matrix of each directed link's achieved bandwidth (rows senders,
     * columns receivers, job ranks; GB/s; a pair without a link is an empty
     * cell, never 0; a slow link outlined, its evidence line under the
     * matrix), and per collective NCCL's algorithm, protocol, channels and
     * the wait/transfer split. Without proxy records the report's reason
     * stands instead of the matrix. */
    function ncclSection() {
      const N = D.nccl, box = document.getElementById("nccl-links"), note = document.getElementById("ncclnote");
      drawn.nccl = { why: null, comms: [], coll: [] };
      if (!N) { drawn.nccl.why = "the report has no NCCL section"; note.textContent = "Unavailable: " + drawn.nccl.why + "."; return; }
      const why = N.unavailable.join("; ");
      /* a side of a link: its job rank, else its communicator rank, said so */
      const side = (l, k) => l[k + "_rank"] !== null ? { key: "r" + l[k + "_rank"], n: l[k + "_rank"], label: "rank " + l[k + "_rank"] }
        : { key: "c" + l[k], n: 1e9 + l[k], label: "comm rank " + l[k] };
      if (!N.links) {
        drawn.nccl.why = why || "no proxy records";
        note.textContent = "No link matrix: " + drawn.nccl.why + ".";
        note.dataset.why = drawn.nccl.why;
      } else {
        note.textContent = "Achieved bandwidth of each directed link, GB/s: its bytes over its network time over the job, measured on the sender (docs/nccl.md). Rows are senders, columns receivers; an empty cell is a pair without a link. A slow link is outlined in red, its evidence below. Hover a cell for its spread over ops.";
        const slow = {};
        for (const s of N.slow_links) slow[s.link] = s;
        const comms = [...new Set(N.links.map(l => l.comm_hash))];
        for (const c of comms) {
          const idx = N.links.map((l, i) => i).filter(i => N.links[i].comm_hash === c);
          const ranks = {};
          for (const i of idx) for (const k of ["src", "dst"]) { const v = side(N.links[i], k); ranks[v.key] = v; }
          const order = Object.values(ranks).sort((a, b) => a.n - b.n);
          const rec = { comm: c, ranks: order.map(v => v.label), cells: [], slow: [] };
          box.appendChild(h("p", { class: "note" }, "Communicator " + c + ": " + idx.length + " links over " + order.length + " ranks."));
          const t = h("table", { "data-comm": c, class: "nccl-matrix" }), hr = h("tr");
          hr.appendChild(h("th", {}, "sender \\ receiver"));
          for (const v of order) hr.appendChild(h("th", {}, v.label));
          t.appendChild(hr);
          for (const a of order) {
            const tr = h("tr");
            tr.appendChild(h("th", {}, a.label));
            for (const b of order) {
              const i = idx.find(j => side(N.links[j], "src").key === a.key && side(N.links[j], "dst").key === b.key);
              if (i === undefined) { tr.appendChild(h("td", { "data-src": a.label, "data-dst": b.label, title: a.label + " → " + b.label + ": no link" }, "")); continue; }
              const l = N.links[i], f2 = v => v === null ? "–" : v.toFixed(2);
              const td = h("td", { "data-src": a.label, "data-dst": b.label, "data-link": i,
                title: a.label + " → " + b.label + ": " + f2(l.gbps) + " GB/s over " + l.ops + " ops; per op p10 " + f2(l.p10_gbps) + ", p50 " + f2(l.p50_gbps) + ", p90 " + f2(l.p90_gbps) + " GB/s" }, f2(l.gbps));
              if (slow[i]) { td.style.outline = "2px solid #cf222e"; td.style.color = "#cf222e"; td.dataset.slow = "1"; }
              tr.appendChild(td);
              rec.cells.push({ src: a.label, dst: b.label, link: i, text: td.textContent, slow: !!slow[i] });
            }
            t.appendChild(tr);
          }
          box.appendChild(t);
          for (const i of idx) if (slow[i]) {
            box.appendChild(h("p", { class: "note", "data-slow-link": i }, "Slow: " + slow[i].evidence + (slow[i].group_links > 1
              ? " (saving alone " + fmtT(slow[i].saving_us * 1e3) + ", with its group's " + slow[i].group_links + " links " + fmtT(slow[i].group_saving_us * 1e3) + "; whatif " + slow[i].group_whatif + ")"
              : " (saving " + fmtT(slow[i].saving_us * 1e3) + "; whatif " + slow[i].whatif + ")")));
            rec.slow.push({ link: i, evidence: slow[i].evidence });
          }
          drawn.nccl.comms.push(rec);
        }
      }
      /* per collective: NCCL's choices and its split of the op's time */
      const head = ["communicator", "op", "bytes", "ranks", "count", "algorithm", "protocol", "channels", "wait p50", "transfer p50"];
      const t = document.getElementById("nccl-coll"), tr = h("tr");
      for (const c of head) tr.appendChild(h("th", {}, c));
      t.appendChild(tr);
      if (!N.collectives.length) { const r = h("tr"); r.appendChild(h("td", { colspan: head.length, "data-why": why }, "– " + (why || "no collective"))); t.appendChild(r); }
      const noProxy = N.unavailable.length ? N.unavailable[0] : "no proxy records";
      const cell = (v, txt, reason) => v === null ? h("td", { "data-why": reason, title: reason }, "–") : h("td", {}, txt);
      for (const c of N.collectives) {
        const r = h("tr", { "data-comm": c.comm_hash, "data-op": c.op, "data-bytes": c.bytes });
        r.appendChild(h("td", { class: "name" }, c.comm_hash));
        for (const v of [c.op, c.bytes, c.nranks, c.count]) r.appendChild(h("td", {}, String(v)));
        const unsaid = "NCCL's descriptor did not say";
        r.appendChild(cell(c.algo, c.algo, unsaid));
        r.appendChild(cell(c.proto, c.proto, unsaid));
        r.appendChild(cell(c.channels, String(c.channels), unsaid));
        /* the row's own reason (split_reason: NVLS has no proxy steps) before the section's */
        const why = c.split_reason || noProxy;
        r.appendChild(cell(c.wait_p50_us, fmtT(c.wait_p50_us * 1e3), why));
        r.appendChild(cell(c.transfer_p50_us, fmtT(c.transfer_p50_us * 1e3), why));
        t.appendChild(r);
        drawn.nccl.coll.push({ comm: c.comm_hash, op: c.op, bytes: c.bytes, texts: [...r.children].map(x => x.textContent) });
      }
    }
