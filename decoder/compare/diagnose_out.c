/*
 * `cutrace diagnose` output: text (findings ranked, then what could not be
 * checked) and JSON ({"findings":[...],"insufficient_evidence":[...]},
 * docs/diff.md). Numbers are always finite.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diagnose.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"

void ct_diagnosis_json(FILE *f, const struct ct_diagnosis *d, double min_saving)
{
    fprintf(f, "{\"schema\":\"cutrace.diagnose\",\"version\":1,\"cutrace_version\":\"%s\",",
            CT_VERSION);
    ct_json_member(f, "step_us", d->step_us, 3);
    fprintf(f, ",\"iterations\":%zu,\"min_saving_pct\":", d->iterations);
    ct_json_num_g(f, 100 * min_saving);
    fprintf(f, ",\"replay\":{\"used\":%s,\"chunks\":%zu,\"note\":", d->replayed ? "true" : "false",
            d->replay_chunks);
    if (d->replay_note[0])
        ct_json_str(f, d->replay_note);
    else
        fputs("null", f);
    fputc('}', f);
    fprintf(f, ",\"findings\":[");
    for (size_t i = 0; i < d->nf; i++) {
        const struct ct_finding *x = &d->f[i];
        fprintf(f, "%s{\"kind\":\"%s\",\"ranks\":[", i ? "," : "", ct_finding_kind_name(x->kind));
        for (size_t r = 0; r < x->nranks; r++)
            fprintf(f, "%s%d", r ? "," : "", x->ranks[r]);
        fputs("],", f);
        ct_json_member(f, "saving_us", x->saving_us, 3);
        fputc(',', f);
        /* a hang's "saving" is the time lost so far: no share of a step */
        ct_json_member(
            f, "saving_pct",
            d->step_us > 0 && x->kind != CT_FK_HANG ? 100 * x->saving_us / d->step_us : NAN, 3);
        fputs(",\"saving_from\":", f);
        ct_json_str(f, x->from_replay           ? "replay"
                       : isfinite(x->saving_us) ? "formula"
                                                : "unquantified");
        fputs(",\"formula_saving_us\":", f);
        ct_json_num(f, x->from_replay ? x->formula_saving_us : x->saving_us, 3);
        fputs(",\"whatif\":", f);
        if (x->whatif[0])
            ct_json_str(f, x->whatif);
        else
            fputs("null", f);
        fputc(',', f);
        ct_json_member(f, "confidence", x->confidence, 2);
        fputs(",\"confidence_note\":", f);
        if (x->confidence_note[0])
            ct_json_str(f, x->confidence_note);
        else
            fputs("null", f);
        fputs(",\"evidence\":{", f);
        for (size_t k = 0; k < x->nev; k++) {
            fprintf(f, "%s\"%s\":", k ? "," : "", x->ev[k].key);
            if (x->ev[k].str[0])
                ct_json_str(f, x->ev[k].str);
            else
                ct_json_num_g(f, x->ev[k].num);
        }
        fprintf(f, "},\"summary\":");
        ct_json_str(f, x->summary);
        fputc('}', f);
    }
    fprintf(f, "],\"dismissed_by_replay\":[");
    for (size_t i = 0; i < d->ndis; i++) {
        const struct ct_dismissed *x = &d->dis[i];
        fprintf(f, "%s{\"kind\":\"%s\",", i ? "," : "", ct_finding_kind_name(x->kind));
        ct_json_member(f, "formula_saving_us", x->formula_saving_us, 3);
        fputc(',', f);
        ct_json_member(f, "saving_us", x->saving_us, 3);
        fputs(",\"whatif\":", f);
        ct_json_str(f, x->whatif);
        fputc('}', f);
    }
    fprintf(f, "],\"insufficient_evidence\":[");
    for (size_t i = 0; i < d->nins; i++) {
        fprintf(f, "%s{\"kind\":\"%s\",\"reason\":", i ? "," : "",
                ct_finding_kind_name(d->ins[i].kind));
        ct_json_str(f, d->ins[i].reason);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
}

void ct_diagnosis_text(FILE *f, const struct ct_diagnosis *d, double min_saving)
{
    fprintf(f,
            "cutrace diagnose: step p50 %.3f ms over %zu iteration(s); findings saving >= "
            "%.3g%% of the step, largest first\n",
            d->step_us / 1e3, d->iterations, 100 * min_saving);
    if (!d->nf)
        fprintf(f, "\nNo finding: every check ran and none would save %.3g%% of the step.\n",
                100 * min_saving);
    for (size_t i = 0; i < d->nf; i++) {
        const struct ct_finding *x = &d->f[i];
        if (x->kind == CT_FK_HANG) /* time lost so far, not a saving per step */
            fprintf(f, "\n%zu. hang  waited %.1f ms so far, confidence %.2f, ranks", i + 1,
                    x->saving_us / 1e3, x->confidence);
        else if (!isfinite(x->saving_us))
            fprintf(f, "\n%zu. %s  saving not quantified, confidence %.2f, ranks", i + 1,
                    ct_finding_kind_name(x->kind), x->confidence);
        else
            fprintf(f, "\n%zu. %s  saves ~%.1f us/iteration (%.1f%%), confidence %.2f, ranks",
                    i + 1, ct_finding_kind_name(x->kind), x->saving_us,
                    d->step_us > 0 ? 100 * x->saving_us / d->step_us : 0, x->confidence);
        ct_ranks_text(f, x->ranks, x->nranks);
        fprintf(f, "\n   %s\n", x->summary);
        if (x->confidence_note[0])
            fprintf(f, "   confidence %.2f %s\n", x->confidence, x->confidence_note);
        if (x->from_replay)
            fprintf(f, "   saving from the replay of whatif %s (the check's formula: %.1f us)\n",
                    x->whatif, x->formula_saving_us);
        else if (x->whatif[0])
            fprintf(f, "   saving from the check's formula (whatif %s not replayed)\n", x->whatif);
        fprintf(f, "   evidence:");
        for (size_t k = 0; k < x->nev; k++) {
            if (x->ev[k].str[0])
                fprintf(f, " %s=\"%s\"", x->ev[k].key, x->ev[k].str);
            else if (!isfinite(x->ev[k].num)) /* not measured: never a 0 */
                fprintf(f, " %s=-", x->ev[k].key);
            else
                fprintf(f,
                        x->ev[k].num == floor(x->ev[k].num) && fabs(x->ev[k].num) < 1e15
                            ? " %s=%.0f"
                            : " %s=%.4g",
                        x->ev[k].key, x->ev[k].num);
        }
        fputc('\n', f);
    }
    int want = 0;
    for (size_t i = 0; i < d->nf; i++)
        want |= d->f[i].whatif[0] != 0;
    if (want && d->replay_note[0])
        fprintf(f, "\nNo replay: %s.\n", d->replay_note);
    if (d->replay_chunks > 1)
        fprintf(f,
                "\nReplayed in %zu chunks of steps (the job's graph passes the replay's memory "
                "limit; docs/critical-path.md).\n",
                d->replay_chunks);
    if (d->ndis)
        fprintf(f, "\nDismissed by the replay (the fix would save less than %.3g%%):\n",
                100 * min_saving);
    for (size_t i = 0; i < d->ndis; i++)
        fprintf(f, "  %s: whatif %s saves %.1f us/iteration (its formula: %.1f)\n",
                ct_finding_kind_name(d->dis[i].kind), d->dis[i].whatif, d->dis[i].saving_us,
                d->dis[i].formula_saving_us);
    if (d->nins) {
        fprintf(f, "\nNot enough evidence to check:\n");
        for (size_t i = 0; i < d->nins; i++)
            fprintf(f, "  %s: %s\n", ct_finding_kind_name(d->ins[i].kind), d->ins[i].reason);
    }
}
