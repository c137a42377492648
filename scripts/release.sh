#!/usr/bin/env bash
# Build release archives (kubectl-namzu + LICENSE + README.md) and the krew manifest for them.
#
#   scripts/release.sh [--all] [--version vX.Y.Z] [--out DIR] [--base-url URL] [--binary PATH] [TARGET...]
#
# TARGETs are Rust target triples (default: this machine's); --all means every platform in
# .krew.yaml and also writes the committed manifest krew/namzu.yaml. With cargo-zigbuild
# (`pip install ziglang cargo-zigbuild`) every target cross-builds from Linux: linux against glibc
# 2.17, darwin against scripts/macos-sdk-stubs when no SDK is installed; without it each target is
# `cargo build --release --locked --target TARGET`. --binary packs an already built binary (one
# target only). Archives are kubectl-namzu_<version>_<target>.tar.gz (.zip for windows), made
# byte-reproducible: same commit + same rustc = same sha256. DIR/namzu.yaml is the krew Plugin
# manifest with their real sha256s, one platform per target. Exit 2: bad usage or a missing
# prerequisite (one line says which); 1: a build or packing step failed.
set -euo pipefail
cd "$(dirname "$0")/.."

version="v$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
out=dist
base_url="https://github.com/cogitave/kubectl-namzu/releases/download"
binary=""
all=false
targets=()
fail() { echo "release.sh: $1" >&2; exit "${2:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --version|--out|--base-url|--binary) [ $# -ge 2 ] || fail "$1 needs a value" ;;&
    --all) all=true; shift ;;
    --version) version="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --base-url) base_url="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) fail "unknown option $1" ;;
    *) targets+=("$1"); shift ;;
  esac
done
if $all; then
  [ ${#targets[@]} -eq 0 ] && [ -z "$binary" ] || fail "--all takes no TARGET or --binary"
  mapfile -t targets < <(sed -n 's/.*kubectl-namzu_{{ .TagName }}_\([^"]*\)\.\(tar\.gz\|zip\)".*/\1/p' .krew.yaml)
  # cross-building every platform needs zig and each target's standard library: say so up front
  command -v cargo-zigbuild > /dev/null || fail "--all needs cargo-zigbuild: pip install ziglang cargo-zigbuild"
  installed="$(rustup target list --installed 2> /dev/null || true)"
  for t in "${targets[@]}"; do
    grep -qx "$t" <<< "$installed" || fail "--all needs the $t target: rustup target add $t"
  done
  # the committed manifest must describe a commit: refuse uncommitted changes, before and after
  clean() { [ -z "$(git status --porcelain -- . ':!krew/namzu.yaml')" ]; }
  clean || fail "--all needs a clean work tree (commit first)"
  commit="$(git rev-parse HEAD)"
fi
[ ${#targets[@]} -gt 0 ] || targets=("$(rustc -vV | sed -n 's/^host: //p')")
if [ -n "$binary" ] && [ ${#targets[@]} -ne 1 ]; then
  fail "--binary goes with exactly one target"
fi

# krew's os/arch for a target triple
platform() {
  local os arch
  case "$1" in
    *-linux-*) os=linux ;; *-apple-darwin) os=darwin ;; *-windows-*) os=windows ;;
    *) echo "release.sh: no krew platform for $1" >&2; return 1 ;;
  esac
  case "$1" in
    x86_64-*) arch=amd64 ;; aarch64-*) arch=arm64 ;;
    *) echo "release.sh: no krew arch for $1" >&2; return 1 ;;
  esac
  echo "$os $arch"
}

# Paths of this checkout and of the cargo home are remapped so the binary does not depend on them.
export RUSTFLAGS="--remap-path-prefix=$PWD=/kubectl-namzu --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
build() {
  local target="$1" flags="$RUSTFLAGS" sdk="${SDKROOT:-}"
  if ! command -v cargo-zigbuild > /dev/null; then
    cargo build --release --locked --target "$target"
    return
  fi
  case "$target" in
    *-linux-gnu) target="$target.2.17" ;; # the oldest glibc Rust supports: runs on any distro
    *-apple-darwin)
      # No debug stabs in the output: they name this build's object paths and would feed the
      # LC_UUID the linker hashes from the file (strip runs only after it).
      flags+=" -C link-arg=-Wl,-S"
      [ -n "$sdk" ] || command -v xcrun > /dev/null || sdk="$PWD/scripts/macos-sdk-stubs" ;;
  esac
  case "$target" in # Rust's own minimum macOS versions
    x86_64-apple-darwin) export MACOSX_DEPLOYMENT_TARGET=10.12 ;;
    aarch64-apple-darwin) export MACOSX_DEPLOYMENT_TARGET=11.0 ;;
  esac
  env ${sdk:+SDKROOT="$sdk"} RUSTFLAGS="$flags" cargo zigbuild --release --locked --target "$target"
}

# Archive entries get the commit's time, root ownership and fixed modes: reproducible bytes.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2> /dev/null || echo 315532800)}"
mkdir -p "$out"
for target in "${targets[@]}"; do
  plat="$(platform "$target")"
  read -r os _ <<< "$plat"
  exe=kubectl-namzu; [ "$os" = windows ] && exe=kubectl-namzu.exe
  src="$binary"
  if [ -z "$src" ]; then
    build "$target"
    src="target/$target/release/$exe"
  fi
  name="kubectl-namzu_${version}_${target}"
  stage="$(mktemp -d)"
  install -m 755 "$src" "$stage/$exe"
  # the PE header's link time becomes the commit's (zig's linker has no switch for it)
  [ "$os" != windows ] || python3 - "$stage/$exe" "$epoch" <<'PE'
import struct, sys
path, epoch = sys.argv[1], int(sys.argv[2])
exe = bytearray(open(path, "rb").read())
pe = struct.unpack_from("<I", exe, 0x3C)[0]
assert exe[pe:pe + 4] == b"PE\0\0", "not a PE file"
struct.pack_into("<I", exe, pe + 8, epoch & 0xFFFFFFFF)  # COFF TimeDateStamp
open(path, "wb").write(exe)
PE
  install -m 644 LICENSE README.md "$stage/"
  if [ "$os" = windows ]; then
    python3 - "$out/$name.zip" "$stage" "$epoch" "$exe" LICENSE README.md <<'ZIP'
import os, sys, time, zipfile
archive, stage, epoch, *names = sys.argv[1:]
stamp = time.gmtime(max(int(epoch), 315532800))[:6]  # zip cannot date before 1980
with zipfile.ZipFile(archive, "w") as z:
    for n in names:
        info = zipfile.ZipInfo(n, stamp)
        info.compress_type, info.create_system = zipfile.ZIP_DEFLATED, 3  # 3: unix modes below
        info.external_attr = (os.stat(os.path.join(stage, n)).st_mode & 0o777 | 0o100000) << 16
        z.writestr(info, open(os.path.join(stage, n), "rb").read())
ZIP
  else
    tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
      -C "$stage" -cf - "$exe" LICENSE README.md | gzip -9n > "$out/$name.tar.gz"
  fi
  rm -rf "$stage"
  echo "$out/$name.$([ "$os" = windows ] && echo zip || echo tar.gz)"
done

# Render .krew.yaml (the release bot's template) with this version and the archives' real
# sha256s; a platform whose archive was not built here is left out, and said so.
python3 - "$version" "$out" "$base_url" > "$out/namzu.yaml" <<'RENDER'
import hashlib, os, re, sys
version, out, base_url = sys.argv[1:4]
text = open(".krew.yaml").read().replace("{{ .TagName }}", version)
text = text.replace("https://github.com/cogitave/kubectl-namzu/releases/download", base_url)
head, platforms = text.split("  platforms:\n")
kept = []
for entry in re.split(r"(?m)^(?=  - selector:)", platforms):
    if not entry.strip():
        continue
    m = re.search(r'\{\{addURIAndSha "([^"]+)" \S+ \}\}', entry)
    archive = os.path.join(out, m.group(1).rsplit("/", 1)[1])
    if not os.path.exists(archive):
        print(f"release.sh: {os.path.basename(archive)} not built here: platform left out", file=sys.stderr)
        continue
    sha = hashlib.sha256(open(archive, "rb").read()).hexdigest()
    kept.append(entry.replace(m.group(0), f"uri: {m.group(1)}\n    sha256: {sha}"))
body = "".join(l for l in head.splitlines(True) if not l.startswith("#"))
print(body + "  platforms:\n" + "".join(kept), end="")
RENDER
echo "$out/namzu.yaml"
if $all; then
  if ! clean || [ "$(git rev-parse HEAD)" != "$commit" ]; then
    fail "the work tree changed during the build; krew/namzu.yaml not written" 1
  fi
  mkdir -p krew
  { echo "# krew manifest of $version: scripts/release.sh --all at commit $commit"
    echo "# with $(rustc -V); rebuilding that commit with that rustc gives these sha256s."
    cat "$out/namzu.yaml"; } > krew/namzu.yaml
  echo krew/namzu.yaml
fi
