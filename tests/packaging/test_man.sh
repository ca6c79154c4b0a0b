#!/usr/bin/env bash
# test_man.sh — checks the built man pages (docs/man/) against the binaries they document:
# every setting `smqd -t` prints (the table's sections, a key.<ID> pair, [grant.KEY] and
# [queue.NAME] keys) is a term of its section in smqd.conf(5), every option of `smqd -h` and
# every command and option of `smqctl -h` is in smqd(8) / smqctl(8), the exit codes the help
# texts name are in EXIT STATUS, and every page renders without a groff warning.  It also
# checks that its own comparison catches a page with a setting taken out.
#
#   SMQD_BIN=build/smqd SMQCTL_BIN=build/smqctl MAN_DIR=build/docs/man \
#       bash tests/packaging/test_man.sh            (ctest passes all three)
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../integration/lib.sh
. "$repo/tests/integration/lib.sh"

require_bin
require_tools groff awk
: "${SMQCTL_BIN:?SMQCTL_BIN must point to the smqctl binary}"
SMQD_BIN=$(realpath "$SMQD_BIN") SMQCTL_BIN=$(realpath "$SMQCTL_BIN")
: "${MAN_DIR:?MAN_DIR must be the build directory of docs/man}"
for page in smqd.8 smqctl.8 smqd.conf.5; do
    [ -s "$MAN_DIR/$page" ] || { echo "$MAN_DIR/$page was not built (scdoc; -DSMQD_MAN=ON)" >&2
                                 echo "0 passed, 1 failed"; exit 1; }
done

# The roff with scdoc's escapes undone, so "key.\&<ID>" and "\-" compare as text.
plain() { sed -e 's/\\&//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' "$1"; }

# "SECTION<tab>KEY" for every term of a settings page: a line that starts with a bold word,
# under ".SS [server]" or ".SH GRANTS: [grant.KEY]".  key.<ID> terms count as "key.".
page_terms() {
    plain "$1" | awk '
        /^\.S[HS] / { sec = ""; if (match($0, /\[[^]]*\]/)) sec = substr($0, RSTART + 1, RLENGTH - 2); next }
        sec != "" && /^\\fB/ {
            t = substr($0, 4); sub(/\\fR.*/, "", t); sub(/ .*/, "", t)
            if (index(t, ".") > 0) t = substr(t, 1, index(t, "."))
            print sec "\t" t
        }' | sort -u
}

# The same for `smqd -t` output: "[section]" then "key = value" or "# key = (not set)".
# Per-file sections are named as the page names them: [grant.KEY], [queue.NAME].
printed_settings() {
    awk '
        /^\[.*\]$/ { sec = substr($0, 2, length($0) - 2)
                     if (sec ~ /^grant\./) sec = "grant.KEY"; else if (sec ~ /^queue\./) sec = "queue.NAME"
                     next }
        /^$/ { sec = ""; next }
        sec != "" && (/^[A-Za-z_][A-Za-z0-9_.]* = ?/ || /^# [A-Za-z_][A-Za-z0-9_.]* = \(not set\)$/) {
            k = $0; sub(/^# /, "", k); sub(/ =.*/, "", k)
            if (index(k, ".") > 0) k = substr(k, 1, index(k, "."))
            print sec "\t" k
        }' "$1" | sort -u
}

# A configuration with every kind of line `smqd -t` prints: a second key pair, a grant, queues.
rich_conf() {
    cat >"$SUITE_TMP/rich.conf" <<'CONF'
[auth]
access_key_id = first
access_key_secret = first-secret
key.second = second-secret
[admin]
token = admin-token-for-the-test
read_token = read-token-for-the-test
[grant.second]
queues = orders-*, billing
actions = send, list
[queue.orders]
dlq_target = orders-dlq
dlq_max_receive_count = 5
[queue.orders-dlq]
CONF
    chmod 600 "$SUITE_TMP/rich.conf"
}

# settings_missing PAGE: the printed settings that PAGE lacks, one per line.
settings_missing() {
    page_terms "$1" >"$SUITE_TMP/terms"
    cat "$SUITE_TMP/table".* | sort -u | comm -23 - "$SUITE_TMP/terms"
}

test_settings_in_conf_page() {
    rich_conf
    local conf n
    for conf in "$repo/conf/smqd.conf" "$SUITE_TMP/rich.conf"; do
        if ! (cd "$SUITE_TMP" && "$SMQD_BIN" -t -c "$conf") >"$SUITE_TMP/t.out" 2>"$SUITE_TMP/t.err"; then
            not_ok "smqd -t -c $conf failed" "$(cat "$SUITE_TMP/t.err")"; return
        fi
        printed_settings "$SUITE_TMP/t.out" >"$SUITE_TMP/table.$(basename "$conf")"
    done
    n=$(cat "$SUITE_TMP/table".* | sort -u | wc -l)
    # The table has 30-odd keys; far fewer means the parsing above went wrong.
    [ "$n" -ge 30 ] && ok "smqd -t prints $n settings" || not_ok "only $n settings parsed from smqd -t"
    local missing
    missing=$(settings_missing "$MAN_DIR/smqd.conf.5")
    [ -z "$missing" ] && ok "every printed setting is in smqd.conf.5" \
        || not_ok "settings missing from smqd.conf.5 (section, key)" "$missing"
    local key
    for key in "grant.KEY	queues" "queue.NAME	dlq_max_receive_count" "auth	key."; do
        grep -qxF "$key" <(cat "$SUITE_TMP/table".*) && ok "smqd -t printed $key" \
            || not_ok "smqd -t did not print $key (the rich configuration no longer covers it)"
    done
}

# The comparison must notice a page that lost a setting: take queue_burst out of a copy.
test_missing_setting_is_caught() {
    grep -v '^\\fBqueue_burst\\fR' "$MAN_DIR/smqd.conf.5" >"$SUITE_TMP/broken.5"
    local missing
    missing=$(settings_missing "$SUITE_TMP/broken.5")
    [ "$missing" = "limits	queue_burst" ] && ok "a page without queue_burst fails the check" \
        || not_ok "the check did not report exactly limits/queue_burst" "$missing"
}

# Every -x / --long option a help text names is bold somewhere in the page.
options_missing() {   # options_missing HELP_FILE PAGE
    local opt
    grep -oE '(^|[][ |(])--?[a-zA-Z][a-zA-Z-]*' "$1" | sed 's/^[][ |(]//' | sort -u | while read -r opt; do
        plain "$2" | grep -qF "\\fB$opt\\fR" || echo "$opt"
    done
}

# Every exit code "N thing" of the help's "exit codes:" line is a term under EXIT STATUS.
exit_codes_missing() {   # exit_codes_missing HELP_FILE PAGE
    local codes terms c
    codes=$(grep '^exit codes:' "$1" | sed 's/^exit codes://' | grep -oE '(^|, )[0-9]+' | grep -oE '[0-9]+')
    terms=$(plain "$2" | awk '/^\.SH/ { in_ex = ($0 ~ /EXIT STATUS/); next } in_ex && /^\\fB[0-9]+\\fR$/ { gsub(/\\f[BR]/, ""); print }')
    [ -n "$codes" ] || echo "(no exit codes in the help text)"
    for c in $codes; do grep -qxF "$c" <<<"$terms" || echo "$c"; done
}

test_smqd_page() {
    "$SMQD_BIN" -h >"$SUITE_TMP/smqd.help" 2>&1 || { not_ok "smqd -h failed"; return; }
    local missing
    missing=$(options_missing "$SUITE_TMP/smqd.help" "$MAN_DIR/smqd.8")
    [ -z "$missing" ] && ok "every option of smqd -h is in smqd.8" \
        || not_ok "options of smqd -h missing from smqd.8" "$missing"
    missing=$(exit_codes_missing "$SUITE_TMP/smqd.help" "$MAN_DIR/smqd.8")
    [ -z "$missing" ] && ok "every exit code of smqd -h is in smqd.8" \
        || not_ok "exit codes missing from smqd.8's EXIT STATUS" "$missing"
}

test_smqctl_page() {
    "$SMQCTL_BIN" -h >"$SUITE_TMP/smqctl.help" 2>&1 || { not_ok "smqctl -h failed"; return; }
    # Commands: the first words of the indented lines before "options:"; "a | b | c" is three.
    local commands cmd missing=""
    commands=$(awk '/^options:/ { exit } /^  [a-z]/ { line = substr($0, 3); sub(/  +.*$/, "", line)
                   n = split(line, w, / +\| +/); for (i = 1; i <= n; i++) { split(w[i], f, " "); print f[1] } }' \
               "$SUITE_TMP/smqctl.help" | sort -u)
    [ "$(wc -w <<<"$commands")" -ge 10 ] && ok "smqctl -h names $(wc -w <<<"$commands") commands" \
        || not_ok "too few commands parsed from smqctl -h" "$commands"
    # A command is documented when it is bold in a term line of COMMANDS ("health | ready").
    plain "$MAN_DIR/smqctl.8" | awk '/^\.SH/ { in_c = ($0 ~ /COMMANDS/); next } in_c && /^\\fB/' \
        >"$SUITE_TMP/command_terms"
    for cmd in $commands; do
        grep -qF "\\fB$cmd\\fR" "$SUITE_TMP/command_terms" || missing="$missing $cmd"
    done
    [ -z "$missing" ] && ok "every command of smqctl -h is a term of smqctl.8 COMMANDS" \
        || not_ok "commands of smqctl -h missing from smqctl.8:$missing"
    missing=$(options_missing "$SUITE_TMP/smqctl.help" "$MAN_DIR/smqctl.8")
    [ -z "$missing" ] && ok "every option of smqctl -h is in smqctl.8" \
        || not_ok "options of smqctl -h missing from smqctl.8" "$missing"
    missing=$(exit_codes_missing "$SUITE_TMP/smqctl.help" "$MAN_DIR/smqctl.8")
    [ -z "$missing" ] && ok "every exit code of smqctl -h is in smqctl.8" \
        || not_ok "exit codes missing from smqctl.8's EXIT STATUS" "$missing"
    plain "$MAN_DIR/smqctl.8" | grep -qF '\fBSMQD_ADMIN_TOKEN\fR' && ok "smqctl.8 documents SMQD_ADMIN_TOKEN" \
        || not_ok "smqctl.8 lacks SMQD_ADMIN_TOKEN"
}

test_pages_render_cleanly() {
    local page out
    for page in smqd.8 smqctl.8 smqd.conf.5; do
        out=$(groff -man -Tutf8 -ww -z "$MAN_DIR/$page" 2>&1)
        [ -z "$out" ] && ok "$page renders without warnings" || not_ok "groff warns on $page" "$out"
        out=$(groff -man -Tutf8 "$MAN_DIR/$page" 2>/dev/null | wc -l)
        [ "$out" -gt 20 ] && ok "$page renders to $out lines" || not_ok "$page renders to only $out lines"
    done
}

run_test test_settings_in_conf_page
run_test test_missing_setting_is_caught
run_test test_smqd_page
run_test test_smqctl_page
run_test test_pages_render_cleanly
finish
