#!/bin/sh
# make-config — writes a host's smqd configuration from the sample with secrets of its own:
# a random access key pair and admin token instead of the sample's public demo pair, and the
# database in /var/lib/smqd.  The Debian package's postinst runs it on first install
# (installed as /usr/libexec/smqd/make-config); tests/packaging/test_deb.sh runs it on a
# throwaway root.
#
#   make-config SAMPLE DEST [GROUP]
#
# DEST is written only if it does not exist (an operator's file is never replaced), mode 0640,
# group GROUP when given (the group smqd runs as, so it can read its secrets).  Exits 1 if
# the sample no longer has one of the lines it replaces, rather than leave a demo secret.
set -eu

[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: make-config SAMPLE DEST [GROUP]" >&2; exit 2; }
sample=$1 dest=$2 group=${3:-}

if [ -e "$dest" ]; then
    echo "make-config: $dest exists, left as it is" >&2
    exit 0
fi

# N random bytes as 2N hex digits: only characters every setting accepts, from the kernel's
# generator (coreutils only, so the package needs no openssl binary).
random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

key_id="smqd-$(random_hex 8)"
key_secret=$(random_hex 32)
admin_token=$(random_hex 32)

for line in 'access_key_id = smqd-demo-key' 'access_key_secret = smqd-demo-secret-change-me' \
            '# token = replace-with-a-long-random-token' 'path = ./smqd.db'; do
    if [ "$(grep -cxF -- "$line" "$sample")" != 1 ]; then
        echo "make-config: $sample has no single line '$line'; not writing $dest" >&2
        exit 1
    fi
done

dir=$(dirname "$dest")
mkdir -p "$dir"
tmp=$(mktemp "$dir/.smqd.conf.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# The secrets are hex, so they need no escaping in sed's replacement.
sed -e "s/^access_key_id = smqd-demo-key\$/access_key_id = $key_id/" \
    -e "s/^access_key_secret = smqd-demo-secret-change-me\$/access_key_secret = $key_secret/" \
    -e "s/^# token = replace-with-a-long-random-token\$/token = $admin_token/" \
    -e 's|^path = ./smqd.db$|path = /var/lib/smqd/smqd.db|' \
    -e 's/^# !!! CHANGE THIS SECRET\..*/# This pair and [admin] token were generated for this host at install./' \
    -e '/^# !!! /d' \
    "$sample" >"$tmp"
chmod 0640 "$tmp"
[ -z "$group" ] || chgrp "$group" "$tmp"
mv "$tmp" "$dest"
trap - EXIT
echo "make-config: wrote $dest with a new access key ($key_id) and admin token" >&2
