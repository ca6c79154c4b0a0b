#!/usr/bin/env bash
# conf-settings.sh — writes the scdoc source of smqd.conf(5): TEMPLATE with its %%SETTINGS%%
# line replaced by the settings table as `smqd -t -c CONF` prints it (each key under its doc
# comment with range and default), so the page cannot list a key smqd lacks or miss one it has.
# Only the table's sections are taken; the [grant.KEY] and [queue.NAME] sections `smqd -t`
# prints for CONF are per-file, and the template documents them.  A line of an unexpected
# shape fails the build rather than being dropped.
#
#   docs/man/conf-settings.sh SMQD CONF TEMPLATE OUT
set -euo pipefail

[ $# -eq 4 ] || { echo "usage: $0 SMQD CONF TEMPLATE OUT" >&2; exit 1; }
smqd=$(realpath "$1") conf=$(realpath "$2") template=$3 out=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# In a scratch directory: -t may look at the volume of a relative [storage] path.
if ! (cd "$work" && "$smqd" -t -c "$conf") >"$work/table" 2>"$work/err"; then
    cat "$work/err" >&2
    echo "conf-settings: $smqd -t -c $conf failed" >&2
    exit 1
fi

awk '
    # scdoc markup in the doc comments ("*_burst", "tls_cert_file") must print as is.
    function esc(s) { gsub(/\\/, "\\\\", s); gsub(/\*/, "\\*", s); gsub(/_/, "\\_", s); return s }
    # A comment that no key line followed describes a family of keys, "what: key.<ID> = <SECRET>"
    # (no such line unless CONF has one); anything else of that kind is a paragraph.
    function flush(   i) {
        if (doc == "") return
        i = index(doc, ": ")
        if (i > 0 && substr(doc, i + 2) ~ /^[A-Za-z_]+\.<[A-Z_]+> = [^ ]+$/)
            printf "*%s*\n\t%s\n\n", esc(substr(doc, i + 2)), esc(substr(doc, 1, i - 1))
        else
            printf "%s\n\n", esc(doc)
        doc = ""
    }
    /^\[.*\]$/ {
        flush()
        name = substr($0, 2, length($0) - 2)
        table = (name !~ /^(grant|queue)\./)
        if (table) { printf "## [%s]\n\n", name; n++ }
        next
    }
    /^$/ { flush(); table = 0; next }
    !table { next }
    /^# [A-Za-z_][A-Za-z0-9_.]* = \(not set\)$/ || /^[A-Za-z_][A-Za-z0-9_.]* = ?/ {
        key = $0; sub(/^# /, "", key); sub(/ =.*/, "", key)
        if (doc == "") { print "conf-settings: no doc comment above " key > "/dev/stderr"; bad = 1 }
        printf "*%s*\n\t%s\n\n", esc(key), esc(doc)
        doc = ""
        next
    }
    /^# / { flush(); doc = substr($0, 3); next }
    { print "conf-settings: unexpected line in smqd -t output: " $0 > "/dev/stderr"; bad = 1 }
    END {
        flush()
        if (n == 0) { print "conf-settings: no settings section in smqd -t output" > "/dev/stderr"; bad = 1 }
        exit bad
    }' "$work/table" >"$work/settings"

awk -v frag="$work/settings" '
    $0 == "%%SETTINGS%%" { while ((getline line < frag) > 0) print line; found = 1; next }
    { print }
    END { if (!found) { print "conf-settings: no %%SETTINGS%% line in the template" > "/dev/stderr"; exit 1 } }
' "$template" >"$work/out"
mv "$work/out" "$out"
