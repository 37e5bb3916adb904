/*
 * Uses only include/cutrace/cutrace.h: runs unchanged with or without
 * libcutrace.so and prints what every call returned.
 */
#include <stdio.h>

#include "cutrace/cutrace.h"

int main(void)
{
    int rec = cutrace_recording();
    int a = cutrace_range_push("step");
    int b = cutrace_range_push("forward");
    cutrace_mark("api-mark");
    int c = cutrace_range_pop();
    int d = cutrace_range_pop();
    int e = cutrace_range_pop(); /* nothing open: -1, counted */
    int f = cutrace_flush(5000);
    printf("RET recording %d push %d %d pop %d %d %d flush %d\n", rec, a, b, c, d, e, f);
    return 0;
}
