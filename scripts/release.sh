#!/usr/bin/env bash
# Build release archives (kubectl-namzu + LICENSE + README.md) and the krew manifest for them.
#
#   scripts/release.sh [--version vX.Y.Z] [--out DIR] [--base-url URL] [--binary PATH] [TARGET...]
#
# TARGETs are Rust target triples (default: this machine's). Each is built with
# `cargo build --release --locked --target TARGET` unless --binary gives an already built binary
# (one target only). Archives are kubectl-namzu_<version>_<target>.tar.gz (.zip for windows);
# DIR/namzu.yaml is the krew Plugin manifest with their real sha256s, one platform per target.
set -euo pipefail
cd "$(dirname "$0")/.."

version="v$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
out=dist
base_url="https://github.com/cogitave/kubectl-namzu/releases/download"
binary=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --base-url) base_url="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "release.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("$(rustc -vV | sed -n 's/^host: //p')")
if [ -n "$binary" ] && [ ${#targets[@]} -ne 1 ]; then
  echo "release.sh: --binary goes with exactly one target" >&2; exit 2
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

mkdir -p "$out"
for target in "${targets[@]}"; do
  read -r os _ < <(platform "$target")
  exe=kubectl-namzu; [ "$os" = windows ] && exe=kubectl-namzu.exe
  src="$binary"
  if [ -z "$src" ]; then
    cargo build --release --locked --target "$target"
    src="target/$target/release/$exe"
  fi
  name="kubectl-namzu_${version}_${target}"
  stage="$(mktemp -d)"
  cp "$src" "$stage/$exe"
  cp LICENSE README.md "$stage/"
  if [ "$os" = windows ]; then
    (cd "$stage" && python3 -m zipfile -c "$OLDPWD/$out/$name.zip" "$exe" LICENSE README.md)
  else
    tar -czf "$out/$name.tar.gz" -C "$stage" "$exe" LICENSE README.md
  fi
  rm -rf "$stage"
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
