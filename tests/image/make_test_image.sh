#!/usr/bin/env bash
# Builds the test images of tests/image/ from a statically linked busybox with umoci, and pushes them to a test
# registry with skopeo (or, for an image index, with curl).
#
#   make_test_image.sh build WORK                  an OCI layout WORK/oci with tags amd64 and arm64, three layers each:
#                                                  busybox and the symlink /bin/sh; /etc/motd, /etc/d/f, its hardlink
#                                                  /etc/d/hard and the set-uid /bin/setid; /etc/motd removed (a whiteout)
#   make_test_image.sh push WORK TAG DEST CERTDIR [USER:PASSWORD] [oci|docker|zstd]
#                                                  copies WORK/oci:TAG to docker://DEST (REGISTRY/REPO:TAG), trusting
#                                                  the CA in CERTDIR/ca.crt, as an OCI image (gzip layers), a Docker
#                                                  schema-2 one, or an OCI one with zstd layers; prints its digest
#   make_test_image.sh index REGISTRY REPO AMD64_DIGEST ARM64_DIGEST TAG CAFILE [USER:PASSWORD]
#                                                  PUTs an OCI index of the two manifests (linux/amd64, linux/arm64/v8)
#                                                  as REPO:TAG; prints its digest
#   make_test_image.sh outer REGISTRY REPO INDEX_DIGEST TAG CAFILE [USER:PASSWORD]
#                                                  PUTs an OCI index whose one entry is the index INDEX_DIGEST (an
#                                                  index of indexes) as REPO:TAG; prints its digest
set -euo pipefail

die() { echo "make_test_image.sh: $*" >&2; exit 1; }

build() {
  local work=$1 oci=$1/oci bundle=$1/bundle
  umoci init --layout "$oci"
  umoci new --image "$oci:amd64"
  umoci unpack --image "$oci:amd64" "$bundle" >/dev/null
  mkdir -p "$bundle/rootfs/bin"
  cp /bin/busybox "$bundle/rootfs/bin/busybox"
  ln -s busybox "$bundle/rootfs/bin/sh"
  umoci repack --refresh-bundle --image "$oci:amd64" "$bundle"
  mkdir -p "$bundle/rootfs/etc/d"
  echo "isb test image" > "$bundle/rootfs/etc/motd"
  echo f > "$bundle/rootfs/etc/d/f"
  ln "$bundle/rootfs/etc/d/f" "$bundle/rootfs/etc/d/hard"
  printf '#!/bin/sh\necho set-id\n' > "$bundle/rootfs/bin/setid"
  chmod 4755 "$bundle/rootfs/bin/setid"
  umoci repack --refresh-bundle --image "$oci:amd64" "$bundle"
  rm "$bundle/rootfs/etc/motd"
  umoci repack --image "$oci:amd64" "$bundle"
  umoci config --image "$oci:amd64" --config.cmd /bin/sh --config.env PATH=/bin --config.workingdir /
  umoci config --image "$oci:amd64" --tag arm64 --architecture arm64
  rm -rf "$bundle"
}

push() {
  local work=$1 tag=$2 dest=$3 certdir=$4 creds=${5:-} format=${6:-oci}
  local args=(--dest-cert-dir "$certdir" --digestfile "$work/digest.$tag")
  [[ -n $creds ]] && args+=(--dest-creds "$creds")
  case $format in
    docker) args+=(--format v2s2) ;;
    zstd) args+=(--dest-compress-format zstd) ;;
    oci) ;;
    *) die "push: format '$format' is none of oci, docker, zstd" ;;
  esac
  skopeo copy --quiet "${args[@]}" "oci:$work/oci:$tag" "docker://$dest" >&2
  cat "$work/digest.$tag"
}

index() {
  local registry=$1 repo=$2 amd64=$3 arm64=$4 tag=$5 cafile=$6 creds=${7:-}
  local auth=() size_amd64 size_arm64 body
  [[ -n $creds ]] && auth=(-u "$creds")
  size_amd64=$(curl -sfS --cacert "$cafile" "${auth[@]}" -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "https://$registry/v2/$repo/manifests/$amd64" | wc -c)
  size_arm64=$(curl -sfS --cacert "$cafile" "${auth[@]}" -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "https://$registry/v2/$repo/manifests/$arm64" | wc -c)
  body=$(jq -cjn --arg a "$amd64" --arg b "$arm64" --argjson sa "$size_amd64" --argjson sb "$size_arm64" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: [
       {mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $a, size: $sa,
        platform: {os: "linux", architecture: "amd64"}},
       {mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $b, size: $sb,
        platform: {os: "linux", architecture: "arm64", variant: "v8"}}]}')
  printf %s "$body" | curl -sfS --cacert "$cafile" "${auth[@]}" -X PUT \
    -H 'Content-Type: application/vnd.oci.image.index.v1+json' --data-binary @- \
    "https://$registry/v2/$repo/manifests/$tag" >/dev/null
  printf 'sha256:%s' "$(printf %s "$body" | sha256sum | cut -d' ' -f1)"
}

outer() {
  local registry=$1 repo=$2 inner=$3 tag=$4 cafile=$5 creds=${6:-}
  local auth=() size body
  [[ -n $creds ]] && auth=(-u "$creds")
  size=$(curl -sfS --cacert "$cafile" "${auth[@]}" -H 'Accept: application/vnd.oci.image.index.v1+json' \
    "https://$registry/v2/$repo/manifests/$inner" | wc -c)
  body=$(jq -cjn --arg d "$inner" --argjson s "$size" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: [
       {mediaType: "application/vnd.oci.image.index.v1+json", digest: $d, size: $s}]}')
  printf %s "$body" | curl -sfS --cacert "$cafile" "${auth[@]}" -X PUT \
    -H 'Content-Type: application/vnd.oci.image.index.v1+json' --data-binary @- \
    "https://$registry/v2/$repo/manifests/$tag" >/dev/null
  printf 'sha256:%s' "$(printf %s "$body" | sha256sum | cut -d' ' -f1)"
}

case ${1:-} in
  build) [[ $# -eq 2 ]] || die "usage: build WORK"; build "$2" ;;
  push) [[ $# -ge 5 ]] || die "usage: push WORK TAG DEST CERTDIR [USER:PASSWORD] [oci|docker|zstd]"; shift; push "$@" ;;
  index) [[ $# -ge 7 ]] || die "usage: index REGISTRY REPO AMD64_DIGEST ARM64_DIGEST TAG CAFILE [USER:PASSWORD]"; shift; index "$@" ;;
  outer) [[ $# -ge 6 ]] || die "usage: outer REGISTRY REPO INDEX_DIGEST TAG CAFILE [USER:PASSWORD]"; shift; outer "$@" ;;
  *) die "usage: build | push | index | outer (see the comment at the top)" ;;
esac
