#!/usr/bin/env bash
# test_deb.sh — the Debian package (debian/, scripts/build-deb.sh): it builds, lintian has no
# error or warning, it holds the expected files with the expected modes, its Depends were
# computed by dpkg-shlibdeps, its maintainer scripts' logic run against a throwaway root
# make the smqd state directory and a configuration with fresh secrets that smqd -t accepts,
# purge removes both, and the installed unit passes systemd-analyze verify.
# Nothing is installed on this machine: the package is unpacked with dpkg-deb -x, and the
# commands that would change the host (adduser, chown, systemctl) are stand-ins that log.
#
#   bash tests/packaging/test_deb.sh       (ctest: packaging.deb; about a minute)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../integration/lib.sh
. "$repo/tests/integration/lib.sh"
require_tools dpkg-buildpackage dpkg-deb dh lintian systemd-analyze fakeroot

out=$SUITE_TMP/out
deb=""
root=$SUITE_TMP/root

# Builds through the documented one-liner, into a directory of the suite's own.
test_build() {
    if "$repo/scripts/build-deb.sh" "$out" >"$SUITE_TMP/build.log" 2>&1; then
        ok "scripts/build-deb.sh builds the package"
    else
        not_ok "scripts/build-deb.sh failed" "$(tail -n 40 "$SUITE_TMP/build.log")"
        finish
    fi
    deb=$(ls "$out"/smqd_*.deb)
    mkdir -p "$root" && dpkg-deb -x "$deb" "$root"
    # dpkg-buildpackage's droppings, had it run in the repository itself.
    assert_eq "the repository has no build files from it" "" \
        "$(cd "$repo" && ls -d debian/smqd debian/.debhelper debian/files debian/*.substvars \
               debian/debhelper-build-stamp obj-* ../smqd_*.deb ../smqd_*.changes 2>/dev/null)"
}

# Lintian has no E: or W: tag, and the package carries the man pages (docs/man/).
test_lintian() {
    local page
    assert_eq "lintian: no error or warning tags" "" "$(grep -E '^[EW]: ' "$SUITE_TMP/build.log")"
    for page in man8/smqd.8 man8/smqctl.8 man5/smqd.conf.5; do
        assert_eq "the package has $page" yes \
            "$([ -s "$root/usr/share/man/$page.gz" ] && echo yes)"
    done
}

# mode owner path, for every file a working install needs.
test_contents() {
    local listing want
    listing=$(dpkg-deb -c "$deb" | awk '{ sub(/^\./, "", $6); print $1, $2, $6 }')
    for want in "-rwxr-xr-x root/root /usr/sbin/smqd" "-rwxr-xr-x root/root /usr/bin/smqctl" \
                "-rw-r--r-- root/root /lib/systemd/system/smqd.service" \
                "-rw-r--r-- root/root /usr/share/smqd/smqd.conf.sample" \
                "-rwxr-xr-x root/root /usr/libexec/smqd/make-config" \
                "-rw-r--r-- root/root /usr/share/doc/smqd/copyright" \
                "-rw-r--r-- root/root /usr/share/doc/smqd/README.md" \
                "-rw-r--r-- root/root /usr/share/doc/smqd/README.Debian" \
                "-rw-r--r-- root/root /usr/share/doc/smqd/docs/operations.md" \
                "-rw-r--r-- root/root /usr/share/doc/smqd/docs/admin-api.md"; do
        assert_match "package holds $want" "^$(printf '%s' "$want" | sed 's/[.]/[.]/g')\$" \
            "$(printf '%s\n' "$listing" | grep -F -- "${want##* }")"
    done
    assert_eq "the demo configuration is not shipped into /etc" "" \
        "$(printf '%s\n' "$listing" | grep ' /etc/')"
    assert_eq "the sample is the repository's conf/smqd.conf" "" \
        "$(cmp "$repo/conf/smqd.conf" "$root/usr/share/smqd/smqd.conf.sample" 2>&1)"
    assert_match "the unit starts the packaged binary" '^ExecStart=/usr/sbin/smqd -c /etc/smqd/smqd.conf$' \
        "$(grep '^ExecStart=' "$root/lib/systemd/system/smqd.service")"
}

# ${shlibs:Depends} filled in: every library smqd and smqctl link, with versions.
test_depends() {
    local dep lib
    dep=$(dpkg-deb -f "$deb" Depends)
    for lib in libmicrohttpd12 libxml2 libsqlite3-0 libssl3 libinih1 libcurl4 libsystemd0 \
               libgnutls30 libc6 adduser; do
        assert_match "Depends names $lib" "(^|, )$lib( \\(>= [^)]*\\))?(,|$)" "$dep"
    done
    assert_match "library dependencies carry versions (dpkg-shlibdeps)" 'libmicrohttpd12 \(>= ' "$dep"
}

# The stand-ins for commands that would change the host: each logs its arguments; install
# does its work without -o/-g (no smqd user here).
make_stubs() {
    local bin=$SUITE_TMP/stubs c
    mkdir -p "$bin"
    for c in adduser chown chgrp systemctl deb-systemd-helper deb-systemd-invoke; do
        printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$c" "$SUITE_TMP/host-changes" >"$bin/$c"
    done
    cat >"$bin/install" <<EOF
#!/bin/sh
echo "install \$*" >>"$SUITE_TMP/host-changes"
args=""
while [ \$# -gt 0 ]; do case \$1 in -o|-g) shift 2 ;; *) args="\$args \$1"; shift ;; esac; done
exec /usr/bin/install \$args
EOF
    chmod +x "$bin"/*
    printf '%s\n' "$bin"
}

# A maintainer script of the package with its absolute paths moved under DIR.
rooted_script() {   # rooted_script NAME DIR
    dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - "./$1" |
        sed -e "s# /etc/# $2/etc/#g" -e "s# /var/lib/smqd# $2/var/lib/smqd#g" \
            -e "s# /usr/# $2/usr/#g"
}

# Runs postinst configure in a fresh target DIR (the package unpacked there first).
run_postinst() {   # run_postinst DIR
    mkdir -p "$1" && dpkg-deb -x "$deb" "$1"
    rooted_script postinst "$1" >"$1.postinst"
    PATH="$STUBS:$PATH" sh -e "$1.postinst" configure ""
}

# smqd.conf's value of KEY (the first line "KEY = value").
conf_value() { sed -n "s/^$2 = //p" "$1" | head -n 1; }

# postinst configure: the user first, then /var/lib/smqd (smqd-owned, 0750) and
# /etc/smqd/smqd.conf (root:smqd 0640) with secrets of its own that smqd -t accepts; the unit
# is enabled, and started when systemd runs.
test_postinst() {
    local t=$SUITE_TMP/target1 conf changes
    : >"$SUITE_TMP/host-changes"
    run_postinst "$t" >"$SUITE_TMP/postinst.log" 2>&1 ||
        not_ok "postinst configure failed" "$(cat "$SUITE_TMP/postinst.log")"
    conf=$t/etc/smqd/smqd.conf
    changes=$(cat "$SUITE_TMP/host-changes")
    assert_match "postinst creates the system user and group smqd" \
        '^adduser --system --group --home [^ ]*/var/lib/smqd --no-create-home --quiet smqd$' \
        "$(printf '%s\n' "$changes" | head -n 1)"
    assert_match "/var/lib/smqd is made smqd:smqd 0750" \
        "^install -d -o smqd -g smqd -m 0750 $t/var/lib/smqd\$" "$changes"
    assert_eq "/var/lib/smqd is not readable by others" "750" "$(stat -c %a "$t/var/lib/smqd")"
    assert_eq "/etc/smqd is 0750" "750" "$(stat -c %a "$t/etc/smqd")"
    assert_eq "the configuration is 0640" "640" "$(stat -c %a "$conf" 2>&1)"
    assert_match "the configuration gets group smqd" "^chgrp smqd $t/etc/smqd/\\.smqd\\.conf\\." "$changes"
    assert_match "the unit is enabled" "^deb-systemd-helper enable smqd.service\$" "$changes"
    assert_match "the unit is started on first install" \
        "_dh_action=start" "$(rooted_script postinst "$t")"
    assert_eq "no demo secret is left" "" "$(grep -n 'demo\|replace-with-a-long' "$conf" | grep -v '^[0-9]*:#')"
    assert_match "a random access key id" '^smqd-[0-9a-f]{16}$' "$(conf_value "$conf" access_key_id)"
    assert_match "a random access key secret" '^[0-9a-f]{64}$' "$(conf_value "$conf" access_key_secret)"
    assert_match "a random admin token" '^[0-9a-f]{64}$' "$(conf_value "$conf" token)"
    assert_eq "the database is in /var/lib/smqd" "/var/lib/smqd/smqd.db" "$(conf_value "$conf" path)"
    if "$t/usr/sbin/smqd" -t -c "$conf" >"$SUITE_TMP/check.out" 2>&1; then
        ok "the packaged smqd -t accepts the generated configuration"
    else
        not_ok "smqd -t rejects the generated configuration" "$(cat "$SUITE_TMP/check.out")"
    fi
}

# A second host gets different secrets; a second run on the same host keeps the file.
test_config_unique_and_kept() {
    local a=$SUITE_TMP/target1/etc/smqd/smqd.conf b=$SUITE_TMP/target2/etc/smqd/smqd.conf k before
    run_postinst "$SUITE_TMP/target2" >/dev/null 2>&1 || not_ok "postinst configure failed"
    for k in access_key_id access_key_secret token; do
        assert_ne "two installs get different $k" "$(conf_value "$a" "$k")" "$(conf_value "$b" "$k")"
    done
    echo "# edited by the operator" >>"$a"
    before=$(md5sum <"$a")
    PATH="$STUBS:$PATH" sh -e "$SUITE_TMP/target1.postinst" configure 0.1.0 >/dev/null 2>&1 ||
        not_ok "postinst configure (upgrade) failed"
    assert_eq "an upgrade keeps the operator's configuration" "$before" "$(md5sum <"$a")"
}

# postrm: remove keeps configuration and state, purge deletes both (and /etc/smqd).
test_postrm() {
    local t=$SUITE_TMP/target1
    rooted_script postrm "$t" >"$t.postrm"
    echo data >"$t/var/lib/smqd/smqd.db"
    PATH="$STUBS:$PATH" sh -e "$t.postrm" remove || not_ok "postrm remove failed"
    assert_eq "remove keeps the state" "data" "$(cat "$t/var/lib/smqd/smqd.db" 2>&1)"
    assert_eq "remove keeps the configuration" "yes" "$([ -f "$t/etc/smqd/smqd.conf" ] && echo yes)"
    PATH="$STUBS:$PATH" sh -e "$t.postrm" purge || not_ok "postrm purge failed"
    assert_eq "purge removes /var/lib/smqd" "gone" "$([ -e "$t/var/lib/smqd" ] || echo gone)"
    assert_eq "purge removes /etc/smqd" "gone" "$([ -e "$t/etc/smqd" ] || echo gone)"
}

# systemd-analyze verify on the unit as installed.  --root makes it resolve ExecStart= and
# the units it names inside the unpacked package, so systemd need not run here; the root gets
# systemd's own units (sysinit.target, ...) and /bin/kill (ExecReload=) from this host.
# verify prints unknown keys and bad values as warnings with exit 0: any output fails.
test_unit_verifies() {
    local out
    cp -an /lib/systemd/system/. "$root/lib/systemd/system/"
    mkdir -p "$root/bin" && cp /bin/kill "$root/bin/kill"
    if out=$(systemd-analyze verify --root="$root" smqd.service 2>&1) && [ -z "$out" ]; then
        ok "systemd-analyze verify accepts smqd.service"
    else
        not_ok "systemd-analyze verify smqd.service" "$out"
    fi
}

STUBS=$(make_stubs)
run_test test_build
run_test test_lintian
run_test test_contents
run_test test_depends
run_test test_postinst
run_test test_config_unique_and_kept
run_test test_postrm
run_test test_unit_verifies
finish
