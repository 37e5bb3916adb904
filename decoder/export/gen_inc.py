#!/usr/bin/env python3
"""Turns a text file into the body of an array initializer of C strings, one
per line (each line stays under the 4095 characters ISO C guarantees): the
HTML report's page is edited as HTML (decoder/export/html_page.html) and
compiled in as data.
usage: gen_inc.py IN OUT"""
import sys

src = open(sys.argv[1], encoding="utf-8").read()
with open(sys.argv[2], "w") as out:
    for line in src.splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.write('"' + esc + '",\n')
