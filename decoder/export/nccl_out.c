/*
 * The report's NCCL section (decoder/export/nccl_out.h): per link the
 * achieved bandwidth and its distribution, the slow links with their
 * evidence, per collective NCCL's choices and the wait/transfer split.
 * Figures the traces cannot give are null with the reason in the
 * section's "unavailable" list.
 */
#include "decoder/export/nccl_out.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"

#define NO_PROXY                                                                                   \
    "no NCCL proxy-step records: they need NCCL's profiler plugin at ABI v4 or newer (NCCL >= "    \
    "2.25) with the job run under `cutrace run`, and network (proxy) transports"
#define NO_NET                                                                                     \
    "no network-plugin events: NCCL's IB and socket transports report them (NetPlugin events, "    \
    "ABI v4 on, NCCL built with its network profiling) under proxy steps; NVLink, shared-memory "  \
    "and P2P transports have none"
#define NO_PHASES                                                                                  \
    "no kernel-phase records: NCCL's profiler plugin ABI v7 reports the barrier phases of its "    \
    "symmetric-memory kernels only"
#define NO_TAGS                                                                                    \
    "no user tags: the application set none (ncclCollConfig_t's userProfilerTag) or NCCL's "       \
    "profiler plugin ABI is older than v7"
#define COLLNET_OPS                                                                                \
    "%" PRIu64 " send ProxyOps to the collective network (CollNet: NCCL's peer is the "            \
    "communicator's size, the network switch's endpoint, not a rank) are not links between "       \
    "ranks: left out of links"
#define NO_RAW                                                                                     \
    "a summary older than version 12 does not carry the count of raw proxy steps (summarize "      \
    "the traces again)"
#define NO_INFO                                                                                    \
    "no NCCL profiler-plugin descriptors: they need NCCL >= 2.23 with the job run under "          \
    "`cutrace run`"

static void member(FILE *f, const char *k, double v, int decimals, int comma)
{
    ct_json_member(f, k, v, decimals);
    if (comma)
        fputc(',', f);
}

static void why_json(FILE *f, const char *k, int why, int comma)
{
    fprintf(f, "\"%s\":", k);
    why ? ct_json_str(f, ct_nchan_why_text(why)) : (void)fputs("null", f);
    if (comma)
        fputc(',', f);
}

/* The kernel's phases from its channels (nccl_channel_phases.h): each
 * figure null with its reason where the instances cannot give it. */
static void channels_json(FILE *f, const struct ct_nchan_row *c)
{
    fprintf(f, "\"channel_instances\":%" PRIu64 ",", c->instances);
    member(f, "kernel_setup_p50_us", c->setup_p50_ns / 1e3, 3, 1);
    member(f, "channel_start_spread_p50_us", c->start_spread_p50_ns / 1e3, 3, 1);
    fputs("\"busiest_channel\":", f);
    c->busiest >= 0 ? fprintf(f, "%d", c->busiest) : fputs("null", f);
    fputc(',', f);
    member(f, "busiest_channel_pct", c->busiest_pct, 1, 1);
    member(f, "busiest_channel_run_p50_us", c->run_p50_ns / 1e3, 3, 1);
    member(f, "channel_stop_spread_p50_us", c->stop_spread_p50_ns / 1e3, 3, 1);
    why_json(f, "channel_reason", c->why, 1);
    why_json(f, "kernel_setup_reason", c->why ? c->why : c->setup_why, 1);
    why_json(f, "busiest_channel_reason", c->why ? c->why : c->busiest_why, 0);
}

void ct_nccl_json(FILE *f, const struct ct_report *rep)
{
    const struct ct_nlinks *L = rep->nlinks;
    fputs("\"nccl\":", f);
    if (!L) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"plugin_ops\":%" PRIu64 ",\"proxy_records\":%" PRIu64 ",", L->info_ops,
            L->proxy_records);
    /* raw proxy steps (CUTRACE_NCCL_STEPS) recorded, against the steps the
     * ProxyOps counted: how much of the job the exports' step slices show */
    fprintf(f, "\"proxy_steps\":%" PRIu64 ",\"raw_steps\":", L->proxy_steps);
    if (L->raw_known) {
        fprintf(f, "%" PRIu64 ",\"raw_steps_reason\":null,", L->raw_steps);
    } else {
        fputs("null,\"raw_steps_reason\":", f);
        ct_json_str(f, NO_RAW);
        fputc(',', f);
    }
    fputs("\"unavailable\":[", f);
    int first = 1;
    if (!L->nl && !L->collnet_ops) {
        ct_json_str(f, NO_PROXY);
        first = 0;
    }
    if (!L->info_ops) {
        fputs(first ? "" : ",", f);
        ct_json_str(f, NO_INFO);
        first = 0;
    }
    if (L->collnet_ops) {
        char b[256];
        snprintf(b, sizeof(b), COLLNET_OPS, L->collnet_ops);
        fputs(first ? "" : ",", f);
        ct_json_str(f, b);
    }
    fputs("],\"links\":", f);
    if (!L->nl) {
        fputs("null,\"slow_links\":null,", f);
    } else {
        fputc('[', f);
        for (size_t i = 0; i < L->nl; i++) {
            const struct ct_nlink *l = &L->l[i];
            fprintf(f, "%s{\"comm_hash\":\"0x%016" PRIx64 "\",\"src\":%d,\"dst\":%d,\"src_rank\":",
                    i ? "," : "", l->comm, l->src, l->dst);
            l->src_rank >= 0 ? fprintf(f, "%d", l->src_rank) : fputs("null", f);
            fputs(",\"dst_rank\":", f);
            l->dst_rank >= 0 ? fprintf(f, "%d", l->dst_rank) : fputs("null", f);
            fprintf(f, ",\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",", l->ops, l->bytes);
            member(f, "gbps", l->gbps, 3, 1);
            member(f, "p10_gbps", l->p10, 3, 1);
            member(f, "p50_gbps", l->p50, 3, 1);
            member(f, "p90_gbps", l->p90, 3, 1);
            member(f, "net_us", l->busy_ns / 1e3, 3, 1);
            member(f, "gpu_wait_us", l->gpu_wait_ns / 1e3, 3, 1);
            member(f, "peer_wait_us", l->peer_wait_ns / 1e3, 3, 0);
            fputc('}', f);
        }
        fputs("],\"slow_links\":[", f);
        for (size_t k = 0; k < L->nslow; k++) {
            const struct ct_nslow *s = &L->slow[k];
            const struct ct_nlink *l = &L->l[s->link];
            char ev[256];
            ct_nlinks_evidence(ev, sizeof(ev), rep->nlinks, k);
            fprintf(f, "%s{\"link\":%zu,\"comm_hash\":\"0x%016" PRIx64 "\",", k ? "," : "", s->link,
                    l->comm);
            member(f, "gbps", l->gbps, 3, 1);
            member(f, "peers_lo_gbps", s->peers_lo, 3, 1);
            member(f, "peers_hi_gbps", s->peers_hi, 3, 1);
            member(f, "peers_median_gbps", s->peers_med, 3, 1);
            member(f, "saving_us", l->saving_ns / 1e3, 3, 1);
            member(f, "share_pct", s->share_pct, 2, 1);
            fputs("\"whatif\":", f);
            ct_json_str(f, s->whatif);
            fprintf(f, ",\"group\":%zu,\"group_links\":%zu,", s->group, s->ngroup);
            member(f, "group_saving_us", s->group_saving_ns / 1e3, 3, 1);
            member(f, "group_share_pct", s->group_share_pct, 2, 1);
            fputs("\"group_whatif\":", f);
            ct_json_str(f, s->group_whatif);
            fputs(",\"common_rank\":", f);
            s->common_rank >= 0 ? fprintf(f, "%d", s->common_rank) : fputs("null", f);
            fputs(",\"common_comm_rank\":", f);
            s->common >= 0 ? fprintf(f, "%d", s->common) : fputs("null", f);
            fputs(",\"evidence\":", f);
            ct_json_str(f, ev);
            fputc('}', f);
        }
        fputs("],", f);
    }
    fputs("\"nics\":", f);
    if (!L->nnics) {
        fputs("null,\"nics_reason\":", f);
        ct_json_str(f, NO_NET);
        fputc(',', f);
    } else {
        fputc('[', f);
        for (size_t i = 0; i < L->nnics; i++) {
            const struct ct_nnic_row *w = &L->nics[i];
            const struct ct_nnic *n = &w->n;
            fprintf(f,
                    "%s{\"rank\":%d,\"transport\":\"%s\",\"device\":%d,\"direction\":\"%s\","
                    "\"proxy_ops\":%" PRIu64 ",\"wrs\":%" PRIu64 ",\"bytes\":%" PRIu64 ",",
                    i ? "," : "", w->rank, ct_name_nccl_net_transport(n->transport), n->device,
                    n->send ? "send" : "recv", n->proxy_ops, n->wrs, n->bytes);
            member(f, "busy_us", (double)n->busy / 1e3, 3, 1);
            member(f, "wr_gbps", w->wr_gbps, 3, 1);
            fprintf(f, "\"other_wrs\":%" PRIu64 ",\"other_bytes\":%" PRIu64 "}", n->other_wrs,
                    n->other_bytes);
        }
        fputs("],\"nics_reason\":null,", f);
    }
    fputs("\"collectives\":[", f);
    for (size_t i = 0; i < L->nsplit; i++) {
        const struct ct_nsplit *s = &L->split[i];
        fprintf(f,
                "%s{\"comm_hash\":\"0x%016" PRIx64 "\",\"op\":\"%s\",\"bytes\":%" PRIu64
                ",\"nranks\":%d,\"count\":%" PRIu64 ",\"algo\":",
                i ? "," : "", s->comm, ct_name_nccl_op(s->op), s->bytes, s->nranks, s->count);
        s->algo[0] ? ct_json_str(f, s->algo) : (void)fputs("null", f);
        fputs(",\"proto\":", f);
        s->proto[0] ? ct_json_str(f, s->proto) : (void)fputs("null", f);
        fputs(",\"channels\":", f);
        s->channels ? fprintf(f, "%u", s->channels) : fputs("null", f);
        fputs(",\"warps\":", f);
        s->warps ? fprintf(f, "%u", s->warps) : fputs("null", f);
        fputc(',', f);
        member(f, "wait_p50_us", s->wait_p50_ns / 1e3, 3, 1);
        member(f, "transfer_p50_us", s->transfer_p50_ns / 1e3, 3, 1);
        const char *why = ct_nsplit_why(L, s);
        fputs("\"split_reason\":", f);
        why ? ct_json_str(f, why) : (void)fputs("null", f);
        fputc(',', f);
        channels_json(f, &s->ch);
        fputc(',', f);
        fprintf(f, "\"phase_instances\":%" PRIu64 ",", s->phase_instances);
        member(f, "initial_sync_p50_us", s->phase_p50_ns[0] / 1e3, 3, 1);
        member(f, "compute_p50_us", s->phase_p50_ns[1] / 1e3, 3, 1);
        member(f, "final_sync_p50_us", s->phase_p50_ns[2] / 1e3, 3, 1);
        fputs("\"phase_reason\":", f);
        s->phase_instances ? (void)fputs("null", f) : ct_json_str(f, NO_PHASES);
        fputc('}', f);
    }
    fputs("],\"user_tags\":", f);
    if (!L->ntags) {
        fputs("null,\"user_tags_reason\":", f);
        ct_json_str(f, NO_TAGS);
    } else {
        fputc('[', f);
        for (size_t i = 0; i < L->ntags; i++) {
            const struct ct_ntag_row *t = &L->tags[i];
            fprintf(f, "%s{\"tag\":%" PRIu64 ",\"ops\":%" PRIu64 ",\"timed_ops\":%" PRIu64 ",",
                    i ? "," : "", t->tag, t->ops, t->timed);
            member(f, "gpu_us", t->timed ? t->gpu_ns / 1e3 : NAN, 3, 0);
            fputc('}', f);
        }
        fputs("],\"user_tags_reason\":null", f);
    }
    fputc('}', f);
}

static const char *us_or_dash(char *b, size_t n, double ns)
{
    if (isfinite(ns))
        snprintf(b, n, "%.1f", ns / 1e3);
    else
        snprintf(b, n, "-");
    return b;
}

/* The kernel phases' table, then each reason for a dash once. */
static void channels_text(FILE *f, const struct ct_nlinks *L)
{
    fprintf(f, "  kernel channels, p50 us:\n  %-14s %12s %9s %8s %12s %7s %11s %11s\n", "op",
            "bytes", "instances", "setup", "start spread", "busiest", "its run", "stop spread");
    int seen[8] = {0};
    for (size_t i = 0; i < L->nsplit; i++) {
        const struct ct_nchan_row *c = &L->split[i].ch;
        char a[24], b[24], d[24], e[24], ch[24] = "-";
        if (c->busiest >= 0)
            snprintf(ch, sizeof(ch), "%d", c->busiest);
        fprintf(f, "  %-14s %12" PRIu64 " %9" PRIu64 " %8s %12s %7s %11s %11s\n",
                ct_name_nccl_op(L->split[i].op), L->split[i].bytes, c->instances,
                us_or_dash(a, sizeof(a), c->setup_p50_ns),
                us_or_dash(b, sizeof(b), c->start_spread_p50_ns), ch,
                us_or_dash(d, sizeof(d), c->run_p50_ns),
                us_or_dash(e, sizeof(e), c->stop_spread_p50_ns));
        const uint8_t whys[3] = {c->why, c->setup_why, c->busiest_why};
        for (int k = 0; k < 3; k++)
            if (whys[k] && whys[k] < 8)
                seen[whys[k]] = 1;
    }
    for (int w = 1; w < 8; w++)
        if (seen[w])
            fprintf(f, "    -: %s\n", ct_nchan_why_text(w));
}

void ct_nccl_text(FILE *f, const struct ct_report *rep)
{
    const struct ct_nlinks *L = rep->nlinks;
    if (!L || (!L->nsplit && !L->nl))
        return;
    fprintf(f, "\nNCCL (profiler plugin):\n");
    if (L->nsplit) {
        fprintf(f, "  %-14s %12s %6s %-6s %-6s %4s %5s %11s %11s\n", "op", "bytes", "ranks", "algo",
                "proto", "ch", "warps", "wait us", "transfer us");
        for (size_t i = 0; i < L->nsplit; i++) {
            const struct ct_nsplit *s = &L->split[i];
            char w[24] = "-", t[24] = "-";
            if (isfinite(s->wait_p50_ns))
                snprintf(w, sizeof(w), "%.1f", s->wait_p50_ns / 1e3);
            if (isfinite(s->transfer_p50_ns))
                snprintf(t, sizeof(t), "%.1f", s->transfer_p50_ns / 1e3);
            fprintf(f, "  %-14s %12" PRIu64 " %6d %-6s %-6s %4u %5u %11s %11s\n",
                    ct_name_nccl_op(s->op), s->bytes, s->nranks, s->algo[0] ? s->algo : "-",
                    s->proto[0] ? s->proto : "-", s->channels, s->warps, w, t);
        }
        const char *whys[3] = {CT_NSPLIT_NO_PROXY, CT_NSPLIT_NVLS, CT_NSPLIT_NO_STEPS};
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < L->nsplit; i++)
                if (ct_nsplit_why(L, &L->split[i]) &&
                    !strcmp(ct_nsplit_why(L, &L->split[i]), whys[k])) {
                    fprintf(f, "    -: %s\n", whys[k]);
                    break;
                }
    }
    channels_text(f, L);
    int phases = 0;
    for (size_t i = 0; i < L->nsplit; i++)
        phases |= L->split[i].phase_instances > 0;
    if (phases) {
        fprintf(f, "  kernel barrier phases (v7), p50 us:\n  %-14s %12s %9s %12s %10s %10s\n", "op",
                "bytes", "instances", "initial sync", "compute", "final sync");
        for (size_t i = 0; i < L->nsplit; i++) {
            const struct ct_nsplit *s = &L->split[i];
            if (!s->phase_instances)
                continue;
            char a[24], b[24], c[24];
            fprintf(f, "  %-14s %12" PRIu64 " %9" PRIu64 " %12s %10s %10s\n",
                    ct_name_nccl_op(s->op), s->bytes, s->phase_instances,
                    us_or_dash(a, sizeof(a), s->phase_p50_ns[0]),
                    us_or_dash(b, sizeof(b), s->phase_p50_ns[1]),
                    us_or_dash(c, sizeof(c), s->phase_p50_ns[2]));
        }
    }
    for (size_t i = 0; i < L->ntags; i++) {
        const struct ct_ntag_row *t = &L->tags[i];
        char g[24] = "-";
        if (t->timed)
            snprintf(g, sizeof(g), "%.1f", t->gpu_ns / 1e3);
        fprintf(f, "  user tag %" PRIu64 ": %" PRIu64 " ops, GPU %s us\n", t->tag, t->ops, g);
    }
    if (L->raw_known && L->raw_steps)
        fprintf(f,
                "  raw proxy steps (CUTRACE_NCCL_STEPS): %" PRIu64 " recorded of the %" PRIu64
                " the ProxyOps counted\n",
                L->raw_steps, L->proxy_steps);
    if (L->collnet_ops) {
        fprintf(f, "  ");
        fprintf(f, COLLNET_OPS, L->collnet_ops);
        fprintf(f, "\n");
    }
    if (!L->nl) {
        if (!L->collnet_ops)
            fprintf(f, "  links: - (%s)\n", NO_PROXY);
        return;
    }
    fprintf(f, "  %-24s %6s %10s %10s %10s %10s\n", "link (sender -> receiver)", "ops", "GB/s",
            "p10", "p50", "p90");
    for (size_t i = 0; i < L->nl; i++) {
        const struct ct_nlink *l = &L->l[i];
        char a[32], b[32], name[80];
        snprintf(name, sizeof(name), "%s -> %s", ct_nlinks_who(a, sizeof(a), l->src_rank, l->src),
                 ct_nlinks_who(b, sizeof(b), l->dst_rank, l->dst));
        fprintf(f, "  %-24s %6" PRIu64 " %10.3f %10.3f %10.3f %10.3f\n", name, l->ops, l->gbps,
                l->p10, l->p50, l->p90);
    }
    for (size_t k = 0; k < L->nslow; k++) {
        char ev[256];
        ct_nlinks_evidence(ev, sizeof(ev), rep->nlinks, k);
        fprintf(f, "  slow %s\n", ev);
    }
    if (!L->nnics) {
        fprintf(f, "  network devices: - (%s)\n", NO_NET);
        return;
    }
    fprintf(f, "  %-6s %-9s %6s %-4s %8s %14s %12s\n", "rank", "transport", "device", "dir", "wrs",
            "bytes", "WR GB/s");
    for (size_t i = 0; i < L->nnics; i++) {
        const struct ct_nnic_row *w = &L->nics[i];
        char g[24] = "-";
        if (isfinite(w->wr_gbps))
            snprintf(g, sizeof(g), "%.3f", w->wr_gbps);
        fprintf(f, "  %-6d %-9s %6d %-4s %8" PRIu64 " %14" PRIu64 " %12s\n", w->rank,
                ct_name_nccl_net_transport(w->n.transport), w->n.device,
                w->n.send ? "send" : "recv", w->n.wrs, w->n.bytes, g);
    }
}
