#!/usr/bin/env bash
# Packs what bench/real_gpu_check.sh needs onto a GPU machine that cannot build gpufleet (the
# device machine's CUDA image has nvcc but no Debian packages, and no registry): build/gpufleet
# (static), build/gpufleet-full with the Debian shared libraries it links (beside it in lib/, found
# through a small wrapper, since that image lacks libpq, libsqlite3 and others), gpufleet-shim,
# and a minimal curl for an image without one. Writes DIR (default .gpuship, git-ignored via
# .git/info/exclude). On the GPU machine, from the repository root:
#   mkdir -p build && cp -a DIR/gpufleet DIR/gpufleet-full DIR/gpufleet-full.bin \
#     DIR/gpufleet-shim DIR/lib build/ && (command -v curl || cp DIR/curl /usr/local/bin/) &&
#     bash bench/real_gpu_check.sh OUT
# Needs build/ (bash scripts/setup.sh). About 31 MiB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-.gpuship}
grep -qx "/$dir/" .git/info/exclude 2>/dev/null || echo "/$dir/" >>.git/info/exclude
rm -rf "$dir"
mkdir -p "$dir/lib"
cp build/gpufleet build/gpufleet-shim "$dir/"
cp build/gpufleet-full "$dir/gpufleet-full.bin"
# Every library it links but the C library's own (libc, libm, libresolv: the machine's are newer).
for lib in $(ldd build/gpufleet-full | awk '$3 ~ /^\// {print $3}'); do
  case $(basename "$lib") in libc.so.* | libm.so.* | libresolv.so.*) ;; *) cp -L "$lib" "$dir/lib/" ;; esac
done
cat >"$dir/gpufleet-full" <<'SH'
#!/bin/sh
# Debian 12's shared libraries, carried for a machine that lacks them.
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/gpufleet-full.bin" "$@"
SH
cat >"$dir/curl" <<'PY'
#!/usr/bin/env python3
# A minimal curl (-s -f -o FILE -H HEADER URL) for a machine without one.
import sys, urllib.request
args, out, headers, url, fail = sys.argv[1:], None, {}, None, False
i = 0
while i < len(args):
    a = args[i]
    if a == "-o":
        out = args[i + 1]; i += 2; continue
    if a == "-H":
        k, v = args[i + 1].split(":", 1); headers[k.strip()] = v.strip(); i += 2; continue
    if a.startswith("-"):
        fail = fail or "f" in a; i += 1; continue
    url = a if "://" in a else "http://" + a; i += 1
try:
    body = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10).read()
except Exception:
    sys.exit(22 if fail else 7)
(open(out, "wb") if out else sys.stdout.buffer).write(body)
PY
chmod +x "$dir/gpufleet-full" "$dir/curl"
du -sh "$dir"
