/* Suite "redact": the rules of src/redact.h on each shape of secret, and
 * what they leave alone (tests/e2e/check_redaction.py runs them end to end
 * on a real trace and every export). */
#include <check.h>
#include <string.h>

#include "src/redact.h"

static void cmdline(const char *args, size_t len, const char *extra, const char *want)
{
    char out[512];
    ct_redact_cmdline(args, len, extra, out, sizeof(out));
    ck_assert_str_eq(out, want);
}

static void value(const char *in, const char *want)
{
    char out[512];
    ct_redact_value(in, out, sizeof(out));
    ck_assert_str_eq(out, want);
}

START_TEST(secret_options_keep_their_name_and_lose_their_value)
{
    static const char a[] = "train.py\0--password=hunter2\0--api-token\0abc\0--lr=0.1\0plain";
    cmdline(a, sizeof(a), NULL,
            "train.py --password=<redacted> --api-token <redacted> --lr=0.1 plain");
    static const char b[] = "x\0CLIENT_SECRET=s1\0-Passwd\0p2\0--credentials-file=/c.json";
    cmdline(b, sizeof(b) - 1, NULL,
            "x CLIENT_SECRET=<redacted> -Passwd <redacted> --credentials-file=<redacted>");
    /* CUTRACE_REDACT's patterns join the built-in names */
    static const char c[] = "x\0--mycorp-pin\0"
                            "123\0--MyCorpId=7\0--other=1";
    cmdline(c, sizeof(c), "zzz,mycorp",
            "x --mycorp-pin <redacted> --MyCorpId=<redacted> --other=1");
    /* a secret option at the very end has no value to lose */
    static const char d[] = "x\0--token";
    cmdline(d, sizeof(d), NULL, "x --token");
}
END_TEST

START_TEST(urls_bearer_tokens_and_token_shapes_are_scrubbed_anywhere)
{
    value("postgres://admin:pw@db:5432/x", "postgres://admin:<redacted>@db:5432/x");
    value("see https://u:p@h/a and http://h2/b", "see https://u:<redacted>@h/a and http://h2/b");
    value("https://user@host/x", "https://user@host/x"); /* no password: nothing to hide */
    value("Authorization: Bearer abc.def-1", "Authorization: Bearer <redacted>");
    value("AKIAIOSFODNN7EXAMPLE", "<redacted>");
    value("ghp_0123456789abcdefABCDEF0123456789abcd", "<redacted>");
    value("key is sk-proj-4f9Ka81mZtQ2xYw7.", "key is <redacted>.");
    value("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456", "<redacted>");
    value("Zk3mQ9xT2vB7nR4pL8wY1cF6hJ0sD5gA", "<redacted>");
    static const char e[] = "x\0--hf=hf_AbCdEfGhIjKlMnOpQrStUv12";
    cmdline(e, sizeof(e), NULL, "x --hf=<redacted>");
}
END_TEST

START_TEST(what_is_not_secret_is_left_alone)
{
    /* a commit id (hex, no upper case), a path, a model name, numbers */
    value("0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567");
    value("/data/Run2024/ckpt_step1000/model.pt", "/data/Run2024/ckpt_step1000/model.pt");
    value("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct");
    ck_assert(!ct_redact_name("NCCL_DEBUG", 10, NULL));
    ck_assert(!ct_redact_name("CUDA_VISIBLE_DEVICES", 20, NULL));
    ck_assert(ct_redact_name("NCCL_IB_AUTH_KEY", 16, NULL));
    ck_assert(ct_redact_name("hf_token", 8, NULL));
}
END_TEST

START_TEST(output_is_bounded_and_terminated)
{
    char out[8];
    ct_redact_value("postgres://admin:pw@db", out, sizeof(out));
    ck_assert_str_eq(out, "postgre");
    static const char a[] = "a\0--password=x";
    ct_redact_cmdline(a, sizeof(a), NULL, out, sizeof(out));
    ck_assert_uint_eq(strlen(out), 7);
}
END_TEST

Suite *redact_suite(void)
{
    Suite *s = suite_create("redact");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, secret_options_keep_their_name_and_lose_their_value);
    tcase_add_test(tc, urls_bearer_tokens_and_token_shapes_are_scrubbed_anywhere);
    tcase_add_test(tc, what_is_not_secret_is_left_alone);
    tcase_add_test(tc, output_is_bounded_and_terminated);
    suite_add_tcase(s, tc);
    return s;
}
