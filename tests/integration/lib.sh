# lib.sh — helpers for the bash integration suites that drive the real smqd binary.
#
# Sourced by test_*.sh. Provides:
#   server lifecycle  new_server_dir, smqd_start [DIR], smqd_stop, smqd_kill9, smqd_restart_same_data
#   signed requests   mns_request METHOD RESOURCE [BODY] [-H 'Name: value']...
#                     mns_request_v4 (same arguments, signature V4)
#   assertions        ok/not_ok, assert_eq, assert_status, assert_error, assert_xml, ...
#   summary           finish  (prints "N passed, M failed", exits non-zero when M > 0)
#
# Why bash + curl + openssl: this is exactly what an operator's script would do against
# the real service (protocol doc, Appendix A), so it checks the wire contract with no SDK
# quirks in between. Every server runs on 127.0.0.1 port 0 with its own mktemp -d data dir,
# is watched by a watchdog that bounds its life, and is killed by PID when the suite exits.
#
# Tunables (environment):
#   SMQD_BIN           path of the smqd binary (ctest passes it)
#   SMQD_TEST_MAX_S    watchdog: max life of one server in seconds (default 280)
#   SMQD_TEST_VERBOSE  1 = print every request/response status

set -u

: "${SMQD_TEST_MAX_S:=280}"
: "${SMQD_TEST_VERBOSE:=0}"

MNS_AK_DEFAULT=testAccessKeyId
MNS_SK_DEFAULT=testAccessKeySecret
MNS_NS='http://mns.aliyuncs.com/doc/v1'
XML_CT='text/xml;charset=utf-8'

PASS_COUNT=0
FAIL_COUNT=0
CURRENT_TEST=""

# Scratch space for request/response files of this suite (not the server's data dir).
SUITE_TMP=$(mktemp -d "${TMPDIR:-/tmp}/smqd-it-suite.XXXXXX")

# Every server this suite started, so the EXIT trap can kill all of them by PID.
SERVER_PIDS=()
WATCHDOG_PIDS=()
SERVER_DIRS=()

# ---------------------------------------------------------------------------------------
# Counters and reporting
# ---------------------------------------------------------------------------------------

ok() {
    PASS_COUNT=$((PASS_COUNT + 1))
    [ "$SMQD_TEST_VERBOSE" = 1 ] && printf 'ok   %s: %s\n' "$CURRENT_TEST" "$1"
    return 0
}

# not_ok DESC [DETAIL] — records a failure with enough context to reproduce it.
not_ok() {
    FAIL_COUNT=$((FAIL_COUNT + 1))
    printf 'FAIL %s: %s\n' "$CURRENT_TEST" "$1"
    if [ $# -ge 2 ] && [ -n "$2" ]; then
        printf '%s\n' "$2" | sed 's/^/     | /'
    fi
    return 1
}

# run_test FUNC — runs one test function; its assertions are counted individually.
run_test() {
    CURRENT_TEST=$1
    printf -- '-- %s\n' "$1"
    local _t0=$SECONDS; "$1"; [ -n "${SMQD_TEST_TIMES:-}" ] && echo "   ($1: $((SECONDS-_t0)) s)"
    CURRENT_TEST=""
}

# finish — the last line is read by CI: exactly "N passed, M failed".
finish() {
    printf '%s passed, %s failed\n' "$PASS_COUNT" "$FAIL_COUNT"
    [ "$FAIL_COUNT" -eq 0 ]
    exit $?
}

# require_tools — fail loudly (not skip) when a tool the suite needs is absent.
require_tools() {
    local t missing=""
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
    done
    if [ -n "$missing" ]; then
        echo "missing tools:$missing (xmllint is in Debian package libxml2-utils)" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
}

require_bin() {
    if [ -z "${SMQD_BIN:-}" ] || [ ! -x "$SMQD_BIN" ]; then
        echo "SMQD_BIN must point to the smqd binary (got '${SMQD_BIN:-}')" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
}

# HOSTILE_CLIENT: the raw-socket client (ctest passes it; run by hand, it is compiled with
# cc into SUITE_TMP).
require_hostile_client() {
    if [ -z "${HOSTILE_CLIENT:-}" ]; then
        HOSTILE_CLIENT="$SUITE_TMP/hostile_client"
        if ! command -v cc >/dev/null 2>&1 \
           || ! cc -std=c11 -O1 -o "$HOSTILE_CLIENT" "$HERE/hostile_client.c" 2>"$SUITE_TMP/cc.err"; then
            echo "cannot build hostile_client.c (needs cc): $(cat "$SUITE_TMP/cc.err" 2>/dev/null)" >&2
            echo "0 passed, 1 failed"
            exit 1
        fi
    fi
    if [ ! -x "$HOSTILE_CLIENT" ]; then
        echo "HOSTILE_CLIENT '$HOSTILE_CLIENT' is not executable" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
}

now_ms() { local us=${EPOCHREALTIME//[.,]/}; echo $(( us / 1000 )); }

# ---------------------------------------------------------------------------------------
# Server lifecycle
# ---------------------------------------------------------------------------------------

# write_config DIR — the config every test server uses (the contract in the brief). The admin
# listener takes port 0 too (its default 8081 would collide between parallel suites); its address
# is logged as "admin listener bound to http://HOST:PORT" (smqd_start exports SMQD_ADMIN).
write_config() {
    local dir=$1
    cat >"$dir/smqd.conf" <<EOF
[server]
listen = 127.0.0.1:0
[storage]
path = $dir/smqd.db
sync = full
[auth]
access_key_id = $MNS_AK_DEFAULT
access_key_secret = $MNS_SK_DEFAULT
key.secondKey = secondSecret
[log]
level = info
[admin]
listen = 127.0.0.1:0
EOF
    chmod 600 "$dir/smqd.conf"   # it holds secrets: as an operator keeps it
}

# start_watchdog PID — bounds a server's life even if this script is SIGKILLed (then no
# EXIT trap runs): it kills the server when the suite process is gone or time is up.
start_watchdog() {
    local pid=$1 suite=$$ max=$SMQD_TEST_MAX_S
    (
        end=$(( $(date +%s) + max ))
        while kill -0 "$pid" 2>/dev/null && kill -0 "$suite" 2>/dev/null \
              && [ "$(date +%s)" -lt "$end" ]; do
            sleep 0.5
        done
        kill -9 "$pid" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
    SMQD_WATCHDOG_PID=$!
    WATCHDOG_PIDS+=("$SMQD_WATCHDOG_PID")
}

# new_server_dir — a fresh data dir with the standard config (append to $NEW_DIR/smqd.conf to
# change it), removed when the suite exits. Sets NEW_DIR (not printed: a $(...) subshell would
# lose the cleanup registration).
new_server_dir() {
    NEW_DIR=$(mktemp -d "${TMPDIR:-/tmp}/smqd-it.XXXXXX")
    SERVER_DIRS+=("$NEW_DIR")
    write_config "$NEW_DIR"
}

# smqd_start [DIR] — starts a server on a fresh data dir (or DIR, to reuse its data) and
# waits, polling with a deadline, for the "listening on http://" line. Exports SMQD_ADDR,
# SMQD_PID, SMQD_DIR, SMQD_LOG. Returns non-zero (and records a failure) if it never listens.
smqd_start() {
    local dir=${1:-} deadline line
    if [ -z "$dir" ]; then
        new_server_dir
        dir=$NEW_DIR
    fi
    SMQD_DIR=$dir
    # SMQD_LOG_DIR: keep the log elsewhere (e.g. when DIR is a deliberately full disk).
    SMQD_LOG="${SMQD_LOG_DIR:-$dir}/smqd.$(date +%s%N).log"
    "$SMQD_BIN" -c "$dir/smqd.conf" </dev/null >>"$SMQD_LOG" 2>&1 &
    SMQD_PID=$!
    SERVER_PIDS+=("$SMQD_PID")
    start_watchdog "$SMQD_PID"
    deadline=$(( $(now_ms) + 10000 ))
    while :; do
        line=$(grep -o 'listening on https\{0,1\}://127\.0\.0\.1:[0-9]*' "$SMQD_LOG" 2>/dev/null | tail -n 1)
        if [ -n "$line" ]; then
            SMQD_ADDR=${line#listening on *://}
            SMQD_SCHEME=${line#listening on }
            SMQD_SCHEME=${SMQD_SCHEME%%://*}
            line=$(grep -o 'admin listener bound to https\{0,1\}://[^ ]*' "$SMQD_LOG" 2>/dev/null | tail -n 1)
            SMQD_ADMIN=${line#admin listener bound to *://}
            export SMQD_ADDR SMQD_SCHEME SMQD_ADMIN SMQD_PID SMQD_DIR SMQD_LOG
            return 0
        fi
        if ! kill -0 "$SMQD_PID" 2>/dev/null; then
            not_ok "smqd_start: server exited before listening" "$(tail -n 20 "$SMQD_LOG")"
            return 1
        fi
        if [ "$(now_ms)" -ge "$deadline" ]; then
            not_ok "smqd_start: no 'listening on http://' line within 10 s" "$(tail -n 20 "$SMQD_LOG")"
            return 1
        fi
        sleep 0.02
    done
}

# wait_pid_gone PID MS — polls until PID is gone; returns 1 on timeout.
wait_pid_gone() {
    local pid=$1 deadline=$(( $(now_ms) + $2 ))
    while kill -0 "$pid" 2>/dev/null; do
        [ "$(now_ms)" -ge "$deadline" ] && return 1
        sleep 0.02
    done
    return 0
}

# smqd_stop — SIGTERM by PID, wait up to 10 s, then SIGKILL. Sets SMQD_EXIT to the exit
# status (0 expected for an orderly stop).
smqd_stop() {
    local pid=$SMQD_PID
    SMQD_EXIT=""
    kill -TERM "$pid" 2>/dev/null
    if ! wait_pid_gone "$pid" 10000; then
        not_ok "smqd_stop: server did not exit within 10 s of SIGTERM"
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    SMQD_EXIT=$?
    kill "$SMQD_WATCHDOG_PID" 2>/dev/null
    wait "$SMQD_WATCHDOG_PID" 2>/dev/null
    # Every orderly stop must exit 0: under the sanitizer build a leak or
    # memory error found at exit turns into a non-zero status here.
    if [ "$SMQD_EXIT" != 0 ]; then
        not_ok "smqd_stop: server exited with status $SMQD_EXIT" "$(tail -n 40 "$SMQD_LOG")"
    fi
    return 0
}

# smqd_kill9 — simulates a crash: no chance to flush or clean up.
smqd_kill9() {
    kill -KILL "$SMQD_PID" 2>/dev/null
    wait "$SMQD_PID" 2>/dev/null
    kill "$SMQD_WATCHDOG_PID" 2>/dev/null
    wait "$SMQD_WATCHDOG_PID" 2>/dev/null
    return 0
}

# smqd_restart_same_data [kill9] — orderly (default) or crash restart on the same data dir.
# The port changes (port 0), so SMQD_ADDR is updated.
smqd_restart_same_data() {
    if [ "${1:-}" = kill9 ]; then smqd_kill9; else smqd_stop; fi
    smqd_start "$SMQD_DIR"
}

cleanup_all() {
    local p
    for p in "${SERVER_PIDS[@]}" "${WATCHDOG_PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
    for p in "${SERVER_PIDS[@]}" "${WATCHDOG_PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    if [ "${SMQD_TEST_KEEP:-0}" != 1 ]; then
        rm -rf "$SUITE_TMP" "${SERVER_DIRS[@]}"
    fi
}
trap cleanup_all EXIT

# ---------------------------------------------------------------------------------------
# Signing (docs/protocol.md §3.1, vectors in docs/protocol.md §3.4)
# ---------------------------------------------------------------------------------------

# mns_string_to_sign VERB MD5 TYPE DATE CANON_HEADERS RESOURCE — CANON_HEADERS is the
# already sorted "name:value\n" block (may be empty). Result in MNS_STS (a variable, since
# command substitution would eat a trailing newline).
mns_string_to_sign() {
    printf -v MNS_STS '%s\n%s\n%s\n%s\n%s%s' "$1" "$2" "$3" "$4" "$5" "$6"
}

# Per request the client forks only openssl, md5sum and curl: everything else (lower-casing,
# trimming, sorting, base64, header lookups) is bash's own, so a suite's CPU goes to smqd and
# not to tr, sed and sort.

# b64_hex HEX — base64 of the bytes HEX spells; result in B64 (no subshell).
B64_ALPHABET=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/
b64_hex() {
    local hex=$1 i n v
    B64=""
    for ((i = 0; i + 6 <= ${#hex}; i += 6)); do
        v=$((16#${hex:i:6}))
        B64+=${B64_ALPHABET:v>>18&63:1}${B64_ALPHABET:v>>12&63:1}${B64_ALPHABET:v>>6&63:1}${B64_ALPHABET:v&63:1}
    done
    n=$(( (${#hex} - i) / 2 ))
    if [ "$n" = 1 ]; then
        v=$((16#${hex:i:2} << 16))
        B64+=${B64_ALPHABET:v>>18&63:1}${B64_ALPHABET:v>>12&63:1}==
    elif [ "$n" = 2 ]; then
        v=$((16#${hex:i:4} << 8))
        B64+=${B64_ALPHABET:v>>18&63:1}${B64_ALPHABET:v>>12&63:1}${B64_ALPHABET:v>>6&63:1}=
    fi
}

# b64_text TEXT — base64 of an ASCII TEXT; result in B64.
b64_text() {
    local LC_ALL=C s=$1 hex="" c i
    for ((i = 0; i < ${#s}; i++)); do
        printf -v c '%02x' "'${s:i:1}"
        hex+=$c
    done
    b64_hex "$hex"
}

# trim_value TEXT — TEXT without leading and trailing white space; result in TRIMMED.
trim_value() {
    TRIMMED=$1
    TRIMMED=${TRIMMED#"${TRIMMED%%[![:space:]]*}"}
    TRIMMED=${TRIMMED%"${TRIMMED##*[![:space:]]}"}
}

# sort_lines_c LINE... — the lines in byte order (LC_ALL=C sort), for the few headers a request
# signs; result in the array SORTED.
sort_lines_c() {
    local LC_ALL=C i j x
    SORTED=("$@")
    for ((i = 1; i < ${#SORTED[@]}; i++)); do
        x=${SORTED[i]}
        for ((j = i - 1; j >= 0; j--)); do
            [[ ${SORTED[j]} > $x ]] || break
            SORTED[j + 1]=${SORTED[j]}
        done
        SORTED[j + 1]=$x
    done
}

# mns_hmac SECRET STRING — base64(HMAC-SHA1(secret, string)).
mns_hmac() {
    mns_hmac_v "$1" "$2"
    printf '%s' "$B64"
}
mns_hmac_v() {   # the same, result in B64
    local out f="$SUITE_TMP/sts.$BASHPID"
    printf '%s' "$2" >"$f"
    out=$(openssl dgst -sha1 -hmac "$1" <"$f")
    b64_hex "${out##* }"
}

# mns_canon_headers 'name: value'... — lowercase names, trimmed values, byte-order sort,
# keeps only x-mns-* (docs/protocol.md §3.1).
mns_canon_headers() {
    mns_canon_headers_v "$@"
    printf '%s' "$CANON"
}
mns_canon_headers_v() {   # the same, result in CANON
    local h name lines=()
    CANON=""
    for h in "$@"; do
        name=${h%%:*}
        name=${name,,}
        case $name in x-mns-*) ;; *) continue ;; esac
        trim_value "${h#*:}"
        lines+=("$name:$TRIMMED")
    done
    [ ${#lines[@]} -gt 0 ] || return 0
    sort_lines_c "${lines[@]}"
    printf -v CANON '%s\n' "${SORTED[@]}"
    CANON=${CANON%$'\n'}
}

# content_md5_of FILE — the SDKs' (non-RFC) form: base64 of the lowercase hex MD5.
content_md5_of() {
    content_md5_of_v "$1"
    printf '%s' "$B64"
}
content_md5_of_v() {   # the same, result in B64
    local hex
    hex=$(md5sum <"$1")
    b64_text "${hex:0:32}"
}

# content_md5_text TEXT — the same for a string (a body signed by hand).
content_md5_text() {
    local f="$SUITE_TMP/md5.$BASHPID"
    printf '%s' "$1" >"$f"
    content_md5_of "$f"
}

# mns_authorization AK SK VERB MD5 TYPE DATE RESOURCE ['Name: value']... — the complete
# Authorization value; mns_request uses it, and the suites check it against the doc vectors.
mns_authorization() {
    mns_authorization_v "$@"
    printf '%s' "$MNS_AUTHZ"
}
mns_authorization_v() {   # the same, result in MNS_AUTHZ
    local ak=$1 sk=$2 verb=$3 md5=$4 ctype=$5 date=$6 resource=$7 canon
    shift 7
    mns_canon_headers_v "$@"
    canon=$CANON
    [ -n "$canon" ] && canon+=$'\n'
    mns_string_to_sign "$verb" "$md5" "$ctype" "$date" "$canon" "$resource"
    mns_hmac_v "$sk" "$MNS_STS"
    MNS_AUTHZ="MNS $ak:$B64"
}

# ---- Signature V4 (docs/protocol.md §3.6) ----

# mns_v4_urlenc STRING [KEEP_SLASH] — the SDK's URL encoding: A-Z a-z 0-9 - _ . ~ stay
# ("/" too when KEEP_SLASH=1), every other byte %XX in upper-case hex.
mns_v4_urlenc() {
    local LC_ALL=C s=$1 keep=${2:-0} out="" c i
    for (( i = 0; i < ${#s}; i++ )); do
        c=${s:i:1}
        case $c in
            [A-Za-z0-9._~-]) out+=$c ;;
            /) if [ "$keep" = 1 ]; then out+=/; else out+=%2F; fi ;;
            *) printf -v c '%%%02X' "'$c"; out+=$c ;;
        esac
    done
    printf '%s' "$out"
}

# mns_v4_canon_query RAW_QUERY — names lower-cased, names and values encoded, sorted by
# name, "name" alone when the value is empty, the last of a repeated name wins.
mns_v4_canon_query() {
    local -A seen=()
    local pair key value out="" k
    local -a pairs=()
    IFS='&' read -r -a pairs <<<"$1"
    for pair in "${pairs[@]}"; do
        if [[ $pair == ?*=* ]]; then key=${pair%%=*}; value=${pair#*=}; else key=$pair; value=""; fi
        key=$(mns_v4_urlenc "$(printf '%s' "$key" | tr 'A-Z' 'a-z')")
        seen[$key]=$(mns_v4_urlenc "$value")
    done
    for k in $(printf '%s\n' "${!seen[@]}" | LC_ALL=C sort); do
        [ -n "$out" ] && out+='&'
        out+=$k
        [ -n "${seen[$k]}" ] && out+="=${seen[$k]}"
    done
    printf '%s' "$out"
}

# mns_v4_hmac HEXKEY STRING — lower-case hex HMAC-SHA256.
mns_v4_hmac() {
    printf '%s' "$2" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" | awk '{print $NF}'
}

# mns_v4_authorization AK SK REGION VERB MD5 TYPE DATE RESOURCE ['Name: value']... — the
# complete V4 Authorization value for a request with these signed inputs (Content-MD5
# and Content-Type when non-empty, the x-mns-* headers given). DATE is the Date header;
# MNS_V4_SCOPE_DATE (yyyyMMdd) overrides the Credential's day, to test a wrong scope.
mns_v4_authorization() {
    local ak=$1 sk=$2 region=$3 verb=$4 md5=$5 ctype=$6 date=$7 resource=$8
    shift 8
    local path=${resource%%\?*} query="" h name value lines="" stamp day k cr sts
    [[ $resource == *\?* ]] && query=${resource#*\?}
    [ -n "$ctype" ] && lines+="content-type:$ctype"$'\n'
    [ -n "$md5" ] && lines+="content-md5:$md5"$'\n'
    for h in "$@"; do
        name=$(printf '%s' "${h%%:*}" | tr 'A-Z' 'a-z')
        case $name in x-mns-*) ;; *) continue ;; esac
        value=$(printf '%s' "${h#*:}" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
        lines+="$name:$value"$'\n'
    done
    lines=$(printf '%s' "$lines" | LC_ALL=C sort -t: -k1,1)
    [ -n "$lines" ] && lines+=$'\n'
    stamp=$(date -u -d "$date" '+%Y%m%dT%H%M%SZ')
    day=${MNS_V4_SCOPE_DATE:-${stamp%%T*}}
    printf -v cr '%s\n%s\n%s\n%s\n' "$verb" "$(mns_v4_urlenc "$path" 1)" \
        "$(mns_v4_canon_query "$query")" "$lines"
    printf -v sts 'MNS4-HMAC-SHA256\n%s\n%s/%s/mns/aliyun_v4_request\n%s' "$stamp" "$day" "$region" "$cr"
    k=$(printf '%s' "aliyun_v4$sk" | od -An -tx1 | tr -d ' \n')
    k=$(mns_v4_hmac "$k" "$day")
    k=$(mns_v4_hmac "$k" "$region")
    k=$(mns_v4_hmac "$k" mns)
    k=$(mns_v4_hmac "$k" aliyun_v4_request)
    printf 'MNS4-HMAC-SHA256 Credential=%s/%s/%s/mns/aliyun_v4_request,Signature=%s' \
        "$ak" "$day" "$region" "$(mns_v4_hmac "$k" "$sts")"
}

# Without arguments it is bash's own strftime (no fork: the fill loops send thousands).
http_date() {
    if [ $# -gt 0 ]; then LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT' "$@"; return; fi
    LC_ALL=C TZ=UTC0 printf '%(%a, %d %b %Y %H:%M:%S GMT)T\n' -1
}
http_date_v() {   # now, result in HTTP_DATE (no subshell)
    LC_ALL=C TZ=UTC0 printf -v HTTP_DATE '%(%a, %d %b %Y %H:%M:%S GMT)T' -1
}

# ---------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------

# mns_request METHOD RESOURCE [BODY] [-H 'Name: value']...
# Signs like Appendix A and sends with curl to SMQD_ADDR. x-mns-* extra headers are signed.
# Per-call knobs (prefix the call with VAR=value):
#   MNS_AK / MNS_SK      credentials (default the test key)
#   MNS_DATE             Date header value (default now)
#   MNS_VERSION          x-mns-version value (default 2015-06-06); MNS_OMIT_VERSION=1 drops it
#   MNS_OMIT_DATE=1      send no Date header (signs an empty date line)
#   MNS_OMIT_AUTH=1      send no Authorization header
#   MNS_AUTH             send this Authorization value verbatim
#   MNS_NO_MD5=1         no Content-MD5 even with a body
#   MNS_MD5              send (and sign) this Content-MD5 instead of the real one
#   MNS_CTYPE            Content-Type to send and sign (default text/xml;charset=UTF-8 with a body)
#   MNS_MAX_TIME         curl --max-time (default 40)
#   MNS_INTERFACE        source address for curl (--interface), e.g. 127.0.0.2
#   MNS_CACERT           CA file for an https server (SMQD_SCHEME=https)
#   MNS_SIGNATURE=v4     sign with V4 (docs/protocol.md §3.6) for MNS_REGION (default cn-hangzhou)
# Results: RESP_STATUS, RESP_BODY, RESP_HDRS (file), RESP_MS (elapsed), RESP_ID.
mns_request() {
    local method=$1 resource=$2 body="" has_body=0
    shift 2
    if [ $# -gt 0 ] && [ "$1" != -H ]; then
        body=$1; shift
        [ -n "$body" ] && has_body=1
    fi
    local -a hdrs=()
    while [ $# -gt 0 ]; do
        if [ "$1" = -H ] && [ $# -ge 2 ]; then hdrs+=("$2"); shift 2; else hdrs+=("$1"); shift; fi
    done

    local ak=${MNS_AK:-$MNS_AK_DEFAULT} sk=${MNS_SK:-$MNS_SK_DEFAULT}
    local date
    if [ -n "${MNS_DATE:-}" ]; then date=$MNS_DATE; else http_date_v; date=$HTTP_DATE; fi
    local tag="$SUITE_TMP/r.$BASHPID"
    local md5="" ctype="" h
    local -a curl_args=(-s -S --globoff --path-as-is --noproxy '*' -X "$method"
                        --max-time "${MNS_MAX_TIME:-40}"
                        -o "$tag.body" -D "$tag.hdrs" -w '%{http_code}')
    [ -n "${MNS_INTERFACE:-}" ] && curl_args+=(--interface "$MNS_INTERFACE")
    [ -n "${MNS_CACERT:-}" ] && curl_args+=(--cacert "$MNS_CACERT")

    [ "${MNS_OMIT_VERSION:-0}" = 1 ] || hdrs+=("x-mns-version: ${MNS_VERSION:-2015-06-06}")
    if [ "$has_body" = 1 ]; then
        printf '%s' "$body" >"$tag.req"
        ctype=${MNS_CTYPE-text/xml;charset=UTF-8}
        if [ "${MNS_NO_MD5:-0}" != 1 ]; then
            if [ -n "${MNS_MD5:-}" ]; then
                md5=$MNS_MD5
            else
                content_md5_of_v "$tag.req"; md5=$B64
            fi
        fi
        curl_args+=(--data-binary "@$tag.req")
    fi
    # curl would otherwise add its own Content-Type for --data-binary (form-urlencoded,
    # docs/protocol.md §3.3); send exactly what we sign, and "Content-Type:" removes curl's default.
    if [ "$has_body" = 1 ]; then
        if [ -n "$ctype" ]; then curl_args+=(-H "Content-Type: $ctype"); else curl_args+=(-H "Content-Type:"); fi
    fi
    [ -n "$md5" ] && curl_args+=(-H "Content-MD5: $md5")
    if [ "${MNS_OMIT_DATE:-0}" = 1 ]; then
        # Without Date the server signs with x-mns-date (docs/protocol.md §3.1), so do we.
        date=""
        for h in "${hdrs[@]}"; do
            case ${h%%:*} in
                [xX]-[mM][nN][sS]-[dD][aA][tT][eE]) date=${h#*:}; date=${date#"${date%%[![:space:]]*}"} ;;
            esac
        done
    else
        curl_args+=(-H "Date: $date")
    fi

    if [ -n "${MNS_AUTH+x}" ]; then
        curl_args+=(-H "Authorization: $MNS_AUTH")
    elif [ "${MNS_OMIT_AUTH:-0}" != 1 ] && [ "${MNS_SIGNATURE:-v2}" = v4 ]; then
        curl_args+=(-H "Authorization: $(mns_v4_authorization "$ak" "$sk" "${MNS_REGION:-cn-hangzhou}" \
                                           "$method" "$md5" "$ctype" "$date" "$resource" "${hdrs[@]}")")
    elif [ "${MNS_OMIT_AUTH:-0}" != 1 ]; then
        mns_authorization_v "$ak" "$sk" "$method" "$md5" "$ctype" "$date" "$resource" "${hdrs[@]}"
        curl_args+=(-H "Authorization: $MNS_AUTHZ")
    fi
    for h in "${hdrs[@]}"; do curl_args+=(-H "$h"); done
    # curl adds "Expect: 100-continue" to larger bodies; left alone on purpose, because the
    # server must support it (Java sends it, docs/protocol.md §10).

    local t0 t1
    t0=${EPOCHREALTIME//[.,]/}
    RESP_STATUS=$(curl "${curl_args[@]}" "${SMQD_SCHEME:-http}://$SMQD_ADDR$resource" 2>"$tag.err")
    t1=${EPOCHREALTIME//[.,]/}
    RESP_MS=$(( (t1 - t0) / 1000 ))
    [ -n "$RESP_STATUS" ] || RESP_STATUS=000
    RESP_HDRS="$tag.hdrs"
    [ -f "$RESP_HDRS" ] || : >"$RESP_HDRS"
    RESP_BODY=""
    [ -f "$tag.body" ] && RESP_BODY=$(<"$tag.body")
    header_value_v x-mns-request-id
    RESP_ID=$HEADER_VALUE
    [ "$SMQD_TEST_VERBOSE" = 1 ] && echo "   $method $resource -> $RESP_STATUS ${RESP_MS}ms"
    return 0
}

# mns_request_v4 METHOD RESOURCE [BODY] [-H 'Name: value']... — mns_request signed with V4
# (as the Java SDK 2.0.0 does when opted in): the same headers and knobs, plus MNS_REGION
# (default cn-hangzhou) and MNS_V4_SCOPE_DATE. MNS_AUTH still overrides the whole value.
mns_request_v4() {
    MNS_SIGNATURE=v4 mns_request "$@"
}

# mns_request_bg OUT METHOD RESOURCE [...] — runs mns_request in the background; when it
# completes OUT.done holds "STATUS MS" and OUT.body the body. Sets BG_PID.
mns_request_bg() {
    local out=$1; shift
    rm -f "$out.done" "$out.body"
    (
        mns_request "$@"
        printf '%s' "$RESP_BODY" >"$out.body"
        echo "$RESP_STATUS $RESP_MS" >"$out.tmp" && mv "$out.tmp" "$out.done"
    ) </dev/null &
    BG_PID=$!
}

# bg_wait OUT MS — waits (polling) for a background request; sets BG_STATUS, BG_MS, BG_BODY.
bg_wait() {
    local out=$1 deadline=$(( $(now_ms) + $2 ))
    BG_STATUS=timeout BG_MS=-1 BG_BODY=""
    while [ ! -f "$out.done" ]; do
        [ "$(now_ms)" -ge "$deadline" ] && return 1
        sleep 0.02
    done
    read -r BG_STATUS BG_MS <"$out.done"
    BG_BODY=$(cat "$out.body")
    wait "$BG_PID" 2>/dev/null
    return 0
}

# raw_curl ARGS... — unsigned request for routes where signing is beside the point.
# Sets RESP_STATUS/RESP_BODY/RESP_HDRS like mns_request.
raw_curl() {
    local tag="$SUITE_TMP/raw.$BASHPID"
    RESP_STATUS=$(curl -s -S --globoff --path-as-is --noproxy '*' --max-time 20 \
                       -o "$tag.body" -D "$tag.hdrs" -w '%{http_code}' "$@" 2>"$tag.err")
    [ -n "$RESP_STATUS" ] || RESP_STATUS=000
    RESP_HDRS="$tag.hdrs"
    RESP_BODY=""
    [ -f "$tag.body" ] && RESP_BODY=$(<"$tag.body")
    header_value_v x-mns-request-id
    RESP_ID=$HEADER_VALUE
}

# ---------------------------------------------------------------------------------------
# Response inspection
# ---------------------------------------------------------------------------------------

# header_value NAME — value of the header (case-insensitive name) in the final response
# block (a 100-continue block may precede it); CR stripped.
header_value() {
    header_value_v "$1"
    printf '%s' "$HEADER_VALUE"
}
header_value_v() {   # the same, result in HEADER_VALUE (read by bash, no process)
    local want=${1,,} line name found=0
    HEADER_VALUE=""
    [ -f "$RESP_HDRS" ] || return 0
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%$'\r'}
        if [[ $line == HTTP/* ]]; then HEADER_VALUE=""; found=0; continue; fi
        [[ $line == *:* ]] || continue
        name=${line%%:*}
        if [ "$found" = 0 ] && [ "${name,,}" = "$want" ]; then
            HEADER_VALUE=${line#*:}
            HEADER_VALUE=${HEADER_VALUE#"${HEADER_VALUE%%[! $'\t']*}"}
            found=1
        fi
    done <"$RESP_HDRS"
}

# header_name_exact NAME — succeeds when the final block has a header spelled exactly NAME
# (case-sensitive: Java and Python read a case-sensitive map, docs/protocol.md §0).
header_name_exact() {
    local line found=1
    [ -f "$RESP_HDRS" ] || return 1
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%$'\r'}
        if [[ $line == HTTP/* ]]; then found=1; continue; fi
        [[ $line == *:* && ${line%%:*} == "$1" ]] && found=0
    done <"$RESP_HDRS"
    return $found
}

# xml_get NAME [N] [XML] — text of the Nth (default 1) element with local name NAME.
xml_get() {
    local name=$1 n=${2:-1} xml=${3-$RESP_BODY}
    printf '%s' "$xml" | xmllint --xpath "string((//*[local-name()='$name'])[$n])" - 2>/dev/null
}

# xml_count NAME [XML] — number of elements with local name NAME.
xml_count() {
    local xml=${2-$RESP_BODY} c
    c=$(printf '%s' "$xml" | xmllint --xpath "count(//*[local-name()='$1'])" - 2>/dev/null)
    echo "${c:-0}"
}

# xml_children PARENT [XML] — local names of the children of the first PARENT, one per line.
xml_children() {
    local xml=${2-$RESP_BODY}
    printf '%s' "$xml" | xmllint --xpath "//*[local-name()='$1'][1]/*" - 2>/dev/null \
        | grep -o '<[A-Za-z][A-Za-z0-9]*' | sed 's/^<//' | head -n 100
}

# xml_root — local name of the document element.
xml_root() {
    printf '%s' "$RESP_BODY" | xmllint --xpath "local-name(/*)" - 2>/dev/null
}

# xml_root_ns — namespace URI of the document element.
xml_root_ns() {
    printf '%s' "$RESP_BODY" | xmllint --xpath "namespace-uri(/*)" - 2>/dev/null
}

# ---------------------------------------------------------------------------------------
# Assertions (each records one pass or one failure)
# ---------------------------------------------------------------------------------------

resp_summary() {
    printf 'status=%s request-id=%s\nbody=%s' "$RESP_STATUS" "$RESP_ID" "$(printf '%s' "$RESP_BODY" | head -c 600)"
}

assert_eq() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "expected: '$2'"$'\n'"got:      '$3'"; fi
}

assert_ne() {
    if [ "$2" != "$3" ]; then ok "$1"; else not_ok "$1" "expected something other than '$2'"; fi
}

# assert_match DESC ERE VALUE
assert_match() {
    if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"; else not_ok "$1" "value '$3' does not match /$2/"; fi
}

# assert_no_match DESC ERE VALUE
assert_no_match() {
    if printf '%s' "$3" | grep -Eq -- "$2"; then not_ok "$1" "value '$3' matches /$2/"; else ok "$1"; fi
}

# assert_range DESC LOW HIGH VALUE (integers, inclusive)
assert_range() {
    local v=$4
    if [[ $v =~ ^-?[0-9]+$ ]] && [ "$v" -ge "$2" ] && [ "$v" -le "$3" ]; then
        ok "$1"
    else
        not_ok "$1" "expected $2 <= value <= $3, got '$v'"
    fi
}

# envelope_problems — what is wrong with the parts every response must have
# (docs/protocol.md §0, §2.2):
# x-mns-request-id (exact lowercase name, 24 uppercase hex) and, with an XML body, the exact
# Content-Type. Prints nothing when all is well.
envelope_problems() {
    local ct
    if ! header_name_exact x-mns-request-id; then
        echo "no header spelled exactly 'x-mns-request-id'"
    elif ! [[ $RESP_ID =~ ^[0-9A-F]{24}$ ]]; then
        echo "x-mns-request-id '$RESP_ID' is not 24 uppercase hex"
    fi
    if [ -n "$RESP_BODY" ]; then
        ct=$(header_value Content-Type)
        [ "$ct" = "$XML_CT" ] || echo "Content-Type '$ct' is not exactly '$XML_CT'"
    fi
}

# assert_status DESC CODE — status plus the response envelope.
assert_status() {
    local problems
    if [ "$RESP_STATUS" != "$2" ]; then
        not_ok "$1" "expected status $2"$'\n'"$(resp_summary)"
        return 1
    fi
    problems=$(envelope_problems)
    if [ -n "$problems" ]; then
        not_ok "$1" "$problems"$'\n'"$(resp_summary)"
        return 1
    fi
    ok "$1"
}

# assert_error DESC STATUS CODE — status, envelope and the exact error document
# (docs/protocol.md §8.1 and protocol-decisions.md): declaration, namespace without trailing slash, four children in order,
# RequestId equal to the header, HostId http://{Host}.
assert_error() {
    local desc=$1 status=$2 code=$3 problems re body
    problems=$(envelope_problems)
    [ "$RESP_STATUS" = "$status" ] || problems+=$'\n'"status $RESP_STATUS, expected $status"
    body=${RESP_BODY%$'\n'}
    re='^<\?xml version="1\.0" encoding="UTF-8"\?><Error xmlns="http://mns\.aliyuncs\.com/doc/v1"><Code>([A-Za-z]+)</Code><Message>[^<]+</Message><RequestId>([0-9A-F]{24})</RequestId><HostId>([^<]+)</HostId></Error>$'
    if [[ $body =~ $re ]]; then
        [ "${BASH_REMATCH[1]}" = "$code" ] || problems+=$'\n'"Code ${BASH_REMATCH[1]}, expected $code"
        [ "${BASH_REMATCH[2]}" = "$RESP_ID" ] || problems+=$'\n'"RequestId ${BASH_REMATCH[2]} differs from header $RESP_ID"
        [ "${BASH_REMATCH[3]}" = "${SMQD_SCHEME:-http}://$SMQD_ADDR" ] ||
            problems+=$'\n'"HostId ${BASH_REMATCH[3]}, expected ${SMQD_SCHEME:-http}://$SMQD_ADDR"
    else
        problems+=$'\n'"error body is not the exact <Error> document (expected Code $code)"
    fi
    problems=$(printf '%s' "$problems" | sed '/^$/d')
    if [ -n "$problems" ]; then
        not_ok "$desc" "$problems"$'\n'"$(resp_summary)"
        return 1
    fi
    ok "$desc"
}

# assert_xml DESC NAME EXPECTED [N] — text of the Nth element with local name NAME.
assert_xml() {
    local got
    got=$(xml_get "$2" "${4:-1}")
    if [ "$got" = "$3" ]; then ok "$1"; else not_ok "$1" "<$2> expected '$3', got '$got'"$'\n'"$(resp_summary)"; fi
}

# assert_xml_re DESC NAME ERE [N]
assert_xml_re() {
    local got
    got=$(xml_get "$2" "${4:-1}")
    if printf '%s' "$got" | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1" "<$2> '$got' does not match /$3/"$'\n'"$(resp_summary)"; fi
}

# assert_header DESC NAME EXPECTED — exact value (name compared case-insensitively).
assert_header() {
    local got
    got=$(header_value "$2")
    if [ "$got" = "$3" ]; then ok "$1"; else not_ok "$1" "header $2: expected '$3', got '$got'"; fi
}

# assert_children DESC PARENT 'A B C' — the children of PARENT are exactly these, in order.
assert_children() {
    local got
    got=$(xml_children "$2" | tr '\n' ' ' | sed 's/ $//')
    if [ "$got" = "$3" ]; then ok "$1"; else not_ok "$1" "<$2> children expected '$3', got '$got'"$'\n'"$(resp_summary)"; fi
}

# ---------------------------------------------------------------------------------------
# Small protocol helpers used by both suites
# ---------------------------------------------------------------------------------------

# xml_escape TEXT — for building request bodies (the server must unescape, docs/protocol.md §4).
xml_escape() {
    local s=$1
    # Replacements quoted: bash 5.2 (patsub_replacement) expands a bare '&' to the match.
    s=${s//&/'&amp;'}; s=${s//</'&lt;'}; s=${s//>/'&gt;'}
    printf '%s' "$s"
}

# queue_body [Name value]... — <Queue> request body.
queue_body() {
    local x="<?xml version=\"1.0\" encoding=\"UTF-8\"?><Queue xmlns=\"$MNS_NS/\">"
    while [ $# -ge 2 ]; do x+="<$1>$2</$1>"; shift 2; done
    printf '%s</Queue>' "$x"
}

# message_xml BODY [Name value]... — one <Message> element (no declaration).
message_xml() {
    local x="<Message><MessageBody>$(xml_escape "$1")</MessageBody>"
    shift
    while [ $# -ge 2 ]; do x+="<$1>$2</$1>"; shift 2; done
    printf '%s</Message>' "$x"
}

# message_body BODY [Name value]... — SendMessage request body.
message_body() {
    local inner
    inner=$(message_xml "$@")
    printf '<?xml version="1.0" encoding="UTF-8"?>%s' "${inner/<Message>/<Message xmlns=\"$MNS_NS/\">}"
}

# create_queue NAME [Name value]... — CreateQueue, asserting 201.
create_queue() {
    local name=$1; shift
    mns_request PUT "/queues/$name" "$(queue_body "$@")"
    assert_status "create queue $name" 201
}

# send_msg QUEUE BODY [Name value]... — SendMessage; sets LAST_MSG_ID. Asserts 201.
send_msg() {
    local q=$1; shift
    mns_request POST "/queues/$q/messages" "$(message_body "$@")"
    assert_status "send '$1' to $q" 201
    LAST_MSG_ID=$(xml_get MessageId)
}

# md5_upper TEXT — MessageBodyMD5 as the server must compute it (uppercase hex).
md5_upper() { printf '%s' "$1" | md5sum | cut -c1-32 | tr 'a-f' 'A-F'; }

# queue_attr QUEUE NAME — one GetQueueAttributes element (no assertion).
queue_attr() {
    mns_request GET "/queues/$1"
    xml_get "$2"
}

# wait_for DESC MS CMD... — polls CMD until it succeeds or MS elapse (redis wait_for_condition).
wait_for() {
    local desc=$1 ms=$2 deadline=$(( $(now_ms) + $2 ))
    shift 2
    while ! "$@"; do
        if [ "$(now_ms)" -ge "$deadline" ]; then
            not_ok "$desc (not within $ms ms)"
            return 1
        fi
        sleep 0.05
    done
    ok "$desc"
}
