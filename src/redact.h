/*
 * Secrets kept out of traces: command lines, environment copies and run
 * tags are scrubbed before the shim writes them (docs/recording.md, "Secrets
 * stay out of traces"). The rules:
 *   - a name (an option's, a variable's, a tag's) is secret when it holds
 *     token, key, secret, password, passwd, credential or auth in any
 *     case, or one of the extra patterns (CUTRACE_REDACT: comma-separated,
 *     case-insensitive substrings);
 *   - `--NAME=VALUE`, `-NAME=VALUE` and `NAME=VALUE` arguments with a
 *     secret name keep the name and lose the value; `--NAME VALUE` (an
 *     option with a secret name and no '=') loses the next argument;
 *   - anywhere: the password of a URL's `user:password@`, the token after
 *     `Bearer `, and values that look like tokens (JWTs, the prefixes of
 *     GitHub, GitLab, Slack, Hugging Face, OpenAI-style and AWS access
 *     keys, and any run of 32 or more of [A-Za-z0-9_+=-] holding an upper,
 *     a lower case letter and a digit).
 * A redacted part reads `<redacted>`. Nothing here allocates: the shim
 * calls it once at start, under its guard.
 */
#ifndef CT_REDACT_H
#define CT_REDACT_H

#include <stddef.h>

#define CT_REDACTED "<redacted>"

/* 1 when name[0..len) is a secret's name (extra: CUTRACE_REDACT or NULL). */
int ct_redact_name(const char *name, size_t len, const char *extra);

/* Copies the value s into out (size n, always terminated) with URL
 * passwords, bearer tokens and token-like runs replaced. */
void ct_redact_value(const char *s, char *out, size_t n);

/* A command line of argc NUL-separated arguments (as /proc/self/cmdline
 * holds them, len bytes) into out as one line, arguments separated by
 * spaces, secrets replaced by the rules above. */
void ct_redact_cmdline(const char *args, size_t len, const char *extra, char *out, size_t n);

#endif
