#!/usr/bin/env bash
# check-structure.sh — checks that the code keeps the structure docs/architecture.md
# describes: every source file in exactly one module of its module table, includes
# pointing only to the same layer or below with no cycle between modules nor between
# headers, each third-party header included only by the files its table names, no file
# over 800 lines, no function over 60, a comment at the top of every file, and no mutable
# global declared in a header.  It also checks the folders under src/: a header that
# lives beside the sources (private to its folder) is included only from that folder and
# the folders below it, a module keeps its files in one folder, and no two folders include
# each other's headers.  Prints every violation; exits 1 if there is one.
#
#   scripts/check-structure.sh [REPO]        (default: the repository holding this script)
set -euo pipefail

repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
doc="$repo/docs/architecture.md"
max_file_lines=800
max_function_lines=60
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Problems go to a file, not a variable: many are found inside pipelines (subshells).
problem() { printf 'check-structure: %s\n' "$*" | tee -a "$work/problems" >&2; }

[ -r "$doc" ] || { echo "check-structure: cannot read $doc" >&2; exit 1; }

# The project's own files: the sources and private headers in the folders under src/ (the
# daemon's and smqctl's), and the shared headers of include/smqd/.
(cd "$repo" && find src -name '*.[ch]' && find include/smqd -maxdepth 1 -name '*.h') | LC_ALL=C sort >"$work/files"

# Resolves a short name from the tables (engine.c, ctl_db.h) to its path, from a map built once
# (a lookup per include: forking grep for each would make the check take seconds).  Short
# names stand for paths, so no two files may share one.
declare -A path_by_name
while read -r p; do
    n=${p##*/}
    if [ -n "${path_by_name[$n]:-}" ]; then
        problem "$p and ${path_by_name[$n]} have the same name: the tables name files by name alone"
    else
        path_by_name[$n]=$p
    fi
done <"$work/files"
path_of() {
    [ -n "${path_by_name[$1]:-}" ] || return 1
    printf '%s\n' "${path_by_name[$1]}"
}

# Rows of a markdown table under a "## HEADING" line: "| `a` | ... |", cells trimmed,
# separated by tabs.  Header and ruler rows have no backtick in the first cell.
table_rows() {
    awk -v heading="$1" '
        /^## / { inside = ($0 == "## " heading) ; next }
        inside && /^\| *`/ {
            n = split($0, cell, "|")
            row = ""
            for (i = 2; i < n; i++) {
                gsub(/^ +| +$/, "", cell[i])
                row = row (i > 2 ? "\t" : "") cell[i]
            }
            print row
        }' "$doc"
}

# ---- the module table: module, layer, files ----------------------------------------------
table_rows "Modules" >"$work/modules"
[ -s "$work/modules" ] || problem "no module table under '## Modules' in $doc"
: >"$work/owner"                         # path <tab> module <tab> layer
while IFS=$'\t' read -r name layer files _; do
    name=${name//\`/}
    if ! [[ $layer =~ ^[0-9]+$ ]]; then
        problem "module $name: layer '$layer' is not a number"
        continue
    fi
    for f in $files; do
        f=${f//\`/}
        if p=$(path_of "$f"); then
            printf '%s\t%s\t%s\n' "$p" "$name" "$layer" >>"$work/owner"
        else
            problem "module $name lists $f, which does not exist"
        fi
    done
done <"$work/modules"

cut -f1 "$work/owner" | sort | uniq -d | while read -r p; do
    problem "$p is listed in more than one module"
done
cut -f1 "$work/owner" | sort -u | comm -23 "$work/files" - | while read -r p; do
    problem "$p belongs to no module of the table in docs/architecture.md"
done

declare -A module_by_path layer_by_path
while IFS=$'\t' read -r p name layer; do
    module_by_path[$p]=$name
    layer_by_path[$p]=$layer
done <"$work/owner"
module_of() { printf '%s\n' "${module_by_path[$1]:-}"; }

# ---- folders: each module's files in one folder under src/ -------------------------------
# A module's folder is the one its sources (and private headers) are in; its shared header in
# include/smqd/ counts as that folder's when the folder-to-folder includes are checked.  A
# module with no file under src/ (a header-only interface) is in no folder.
declare -A folder_of_module
while IFS=$'\t' read -r p name _; do
    [[ $p == src/* ]] || continue
    d=${p%/*}
    f=${folder_of_module[$name]:-}
    if [ -z "$f" ]; then
        folder_of_module[$name]=$d
    elif [ "$f" != "$d" ]; then
        problem "module $name has files in $f/ and $d/: a module lives in one folder"
    fi
done <"$work/owner"
folder_of() {
    if [[ $1 == src/* ]]; then folder=${1%/*}; else folder=${folder_of_module[${module_by_path[$1]:-}]:-}; fi
}
layer_of() { printf '%s\n' "${layer_by_path[$1]:-}"; }

# ---- the third-party header table: header (or prefix/), files allowed --------------------
table_rows "Third-party headers" >"$work/vendor"
[ -s "$work/vendor" ] || problem "no table under '## Third-party headers' in $doc"

# The C and POSIX headers, which any file may include.
system_headers=$(echo assert.h ctype.h errno.h fcntl.h float.h getopt.h inttypes.h libgen.h \
    limits.h locale.h math.h netdb.h poll.h pthread.h sched.h signal.h stdalign.h stdarg.h \
    stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h strings.h syslog.h time.h \
    unistd.h)
system_headers=" $system_headers "

# ---- includes ---------------------------------------------------------------------------
# The third-party table, read once: exact header names and prefixes ("openssl/") to the
# files allowed to include them.
declare -A vendor_files
vendor_prefixes=()
while IFS=$'\t' read -r key files _; do
    key=${key//\`/}
    vendor_files[$key]=" ${files//\`/} "
    [[ $key == */ ]] && vendor_prefixes+=("$key")
done <"$work/vendor"

# Sets vkey to the third-party table row a header matches; returns 1 when none does.
match_vendor() {
    local k
    vkey=$1
    [ -n "${vendor_files[$1]+x}" ] && [[ $1 != */ ]] && return 0
    for k in "${vendor_prefixes[@]}"; do
        [[ $1 == "$k"* ]] && { vkey=$k; return 0; }
    done
    return 1
}

: >"$work/edges"                         # module <tab> module, for the cycle check
: >"$work/folder_edges"                  # folder <tab> folder <tab> file <tab> header
: >"$work/vendor_headers"                # headers that include a third-party header
: >"$work/header_edges"                  # header <tab> header it includes, for the file cycles
while read -r p; do
    mod=${module_by_path[$p]:-}
    [ -n "$mod" ] || continue
    layer=${layer_by_path[$p]}
    while read -r inc; do
        case $inc in
            \"*)
                inc=${inc//\"/}
                target=${path_by_name[${inc##*/}]:-}
                [ -n "$target" ] || { problem "$p includes \"$inc\", not a project header"; continue; }
                [[ $p == *.h ]] && printf '%s\t%s\n' "$p" "$target" >>"$work/header_edges"
                if [[ $target == src/* ]]; then
                    tdir=${target%/*}
                    [[ $p == "$tdir"/* ]] ||
                        problem "$p includes $target, a header private to $tdir/: only its folder's files may; a header other folders use belongs in include/smqd/"
                fi
                folder_of "$p"
                pfolder=$folder
                folder_of "$target"
                [ -n "$pfolder" ] && [ -n "$folder" ] && [ "$pfolder" != "$folder" ] &&
                    printf '%s\t%s\t%s\t%s\n' "$pfolder" "$folder" "$p" "$target" >>"$work/folder_edges"
                tmod=${module_by_path[$target]:-}
                [ -n "$tmod" ] || continue
                [ "$tmod" = "$mod" ] && continue
                printf '%s\t%s\n' "$mod" "$tmod" >>"$work/edges"
                tlayer=${layer_by_path[$target]}
                if [ "$tlayer" -gt "$layer" ]; then
                    problem "$p (module $mod, layer $layer) includes $target (module $tmod, layer $tlayer): a layer may use only its own and those below"
                fi
                ;;
            \<*)
                inc=${inc#<}
                inc=${inc%>}
                if match_vendor "$inc"; then
                    [[ ${vendor_files[$vkey]} == *" ${p##*/} "* ]] ||
                        problem "$p includes <$inc>: only the files docs/architecture.md names for $vkey may"
                    [[ $p == *.h ]] && printf '%s\n' "$p" >>"$work/vendor_headers"
                elif [[ $inc == sys/* || $inc == netinet/* || $inc == arpa/* ]]; then
                    :
                elif [[ $system_headers != *" $inc "* ]]; then
                    problem "$p includes <$inc>, neither a C/POSIX header nor one of the third-party table"
                fi
                ;;
        esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p' "$repo/$p")
done <"$work/files"

# A header that pulls in a third-party header passes it on: only its own module may include it.
sort -u "$work/vendor_headers" | while read -r h; do
    hmod=$(module_of "$h")
    (cd "$repo" && grep -l "^#include \"\(smqd/\)\?$(basename "$h")\"" $(cat "$work/files") || true) |
        while read -r user; do
            [ "$(module_of "$user")" = "$hmod" ] ||
                problem "$user includes $h, which carries a third-party header of module $hmod"
        done
done

# No two folders include each other's headers: the folders are layers or groups, and a
# back-arrow between two of them means one of them holds a module of the wrong side.
awk -F'\t' '
    !(($1 FS $2) in first) { first[$1 FS $2] = $3 " includes " $4 }
    END {
        for (k in first) {
            split(k, f, FS)
            if (f[1] < f[2] && ((f[2] FS f[1]) in first))
                printf "folders %s/ and %s/ include each other: %s, and %s\n", f[1], f[2], first[k], first[f[2] FS f[1]]
        }
    }' "$work/folder_edges" | sort >"$work/backarrows"
while read -r line; do problem "$line"; done <"$work/backarrows"
# ... nor around a longer loop.
if [ ! -s "$work/backarrows" ] &&
    ! cut -f1,2 "$work/folder_edges" | sort -u | tr '\t' ' ' | tsort >/dev/null 2>"$work/tsort"; then
    problem "the folders include each other around a loop: $(grep -v 'input contains a loop' "$work/tsort" | sed 's/^tsort: //' | tr '\n' ' ')"
fi

# No header whose includes lead back to it, even inside one module (which the module graph
# cannot see): include guards hide such a loop, and whichever header is read first then
# decides what the other one sees.  Only headers: a .c file is never included, so no loop
# can run through one.
awk -F'\t' '$1 == $2 { print $1 " includes itself" }' "$work/header_edges" >"$work/self"
while read -r line; do problem "$line"; done <"$work/self"
if ! awk -F'\t' '$1 != $2' "$work/header_edges" | sort -u | tr '\t' ' ' | tsort >/dev/null 2>"$work/tsort"; then
    problem "headers include each other around a loop: $(grep -v 'input contains a loop' "$work/tsort" | sed 's/^tsort: //' | tr '\n' ' ')"
fi

# No cycle between modules (tsort names the modules of a loop on stderr).
if ! sort -u "$work/edges" | tr '\t' ' ' | tsort >/dev/null 2>"$work/tsort"; then
    problem "the module graph has a cycle: $(grep -v 'input contains a loop' "$work/tsort" | sed 's/^tsort: //' | tr '\n' ' ')"
fi

# ---- sizes, top comments, globals -------------------------------------------------------
# One awk over every file (a process per file would cost more than the whole check).
# A function is a line "{" at column 0 up to the next "}" at column 0; its signature starts
# at the last line before the "{" that is not indented.
(cd "$repo" && awk -v max_lines="$max_file_lines" -v max="$max_function_lines" '
    function finish_file() {
        if (file == "") return
        if (FNR_last > max_lines) printf "%s has %d lines (at most %d)\n", file, FNR_last, max_lines
    }
    FNR == 1 {
        finish_file()
        file = FILENAME; start = 0; sig = 0; name = ""
        if (substr($0, 1, 2) != "/*") printf "%s does not start with a comment saying what it owns\n", file
    }
    { FNR_last = FNR }
    file ~ /\.c$/ && /^[^ \t{}#\/]/ { sig = FNR; name = $0 }
    file ~ /\.c$/ && /^\{/ && start == 0 { start = sig }
    file ~ /\.c$/ && /^\}/ && start > 0 {
        n = FNR - start + 1
        if (n > max) {
            sub(/\(.*/, "", name)
            printf "%s: function %s has %d lines (at most %d)\n", file, name, n, max
        }
        start = 0
    }
    END { finish_file() }' $(cat "$work/files")) >"$work/sizes"
while read -r line; do problem "$line"; done <"$work/sizes"

# Shared state must be read-only: a header may declare const data only.
(cd "$repo" && grep -n '^[[:space:]]*extern[[:space:]]' $(grep '\.h$' "$work/files") || true) |
    { grep -v 'extern[[:space:]]\+const[[:space:]]' || true; } |
    while read -r line; do problem "mutable global declared in a header: $line"; done

if [ -s "$work/problems" ]; then
    exit 1
fi
printf 'check-structure: %d files in %d modules keep docs/architecture.md\n' \
    "$(wc -l <"$work/files")" "$(wc -l <"$work/modules")"
